"""Worked examples as an edit kind: built by code from train trajectories, never from val/test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.config import load_config
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.skill.document import Skill, approx_tokens
from skillgrad.skill.package import SkillPackage
from skillgrad.tasks.episode_view import shown_observation
from skillgrad.testing import (
    FunctionBackend,
    ToyTask,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.train.examples import (
    ExampleGuard,
    choose_example,
    example_blocks,
    example_item,
    example_lines,
    register_renderer,
    render_actions,
    trajectory_kind,
    without_examples,
)
from skillgrad.train.screens.leak_check import example_copies
from skillgrad.train.screens.leaks import LeakIndex
from skillgrad.types import Item, Message, Score, Trajectory

TASK = ToyTask()
TRAIN, VAL = TASK.load_split("train"), TASK.load_split("val")


def _traj(item: Item, output: str, passed: bool, steps: tuple[dict[str, Any], ...] = ()) -> Any:
    return Trajectory(
        item_id=item.id,
        skill_hash="h",
        messages=(Message("system", ""), Message("user", TASK.prompt(item))),
        output=output,
        score=Score(1.0 if passed else 0.0, passed, "correct" if passed else "wrong"),
        reference=item.reference,
        steps=steps,
    )


def _choose(trajs: list[Trajectory], items: dict[str, Item], **kw: Any) -> Any:
    args: dict[str, Any] = {"skill": "", "step": 1, "tried": (), "max_examples": 2,
                            "max_tokens": 60, "count": approx_tokens,
                            "guard": ExampleGuard.build({"val": VAL}, 8)}  # fmt: skip
    return choose_example(trajs, items, TASK, **{**args, **kw})


def test_an_example_from_a_train_item_is_allowed_and_recorded() -> None:
    item = TRAIN[0]
    choice = _choose([_traj(item, item.input, passed=False)], {item.id: item})
    edit = choice.edit
    assert edit is not None and edit.source == "example" and edit.section == "Examples"
    # a failed item, corrected by its reference (the scorer passes it): the exact reply form
    assert edit.content == f"Input: Word: {item.input}\nReply: {item.reference}"
    assert edit.trajectory_ids == (f"step_0001/{item.id}",)


def test_an_example_copying_a_val_item_is_refused() -> None:
    twin = Item(id="train-twin", input=VAL[0].input, reference=VAL[0].reference)
    choice = _choose([_traj(twin, twin.reference, passed=True)], {twin.id: twin})
    assert choice.edit is None
    assert choice.refused and choice.refused[0][0] == "train-twin"
    assert "(val)" in choice.refused[0][1]


def test_examples_are_bounded_and_an_item_tried_before_is_skipped() -> None:
    a, b = TRAIN[0], TRAIN[1]
    trajs = [_traj(a, a.reference, True), _traj(b, b.reference, True)]
    items = {a.id: a, b.id: b}
    skill = f"## Examples\n\nInput: Word: {a.input}\nReply: {a.reference}\n"
    assert _choose(trajs, items, skill=skill, max_examples=1).edit is None
    picked = _choose(trajs, items, skill=skill, tried=[b.id])
    assert picked.edit is None  # a is shown already, b was tried (rejected) before
    assert example_blocks(skill) == [f"Input: Word: {a.input}\nReply: {a.reference}"]


def test_a_multi_turn_trajectory_renders_its_actions() -> None:
    item = TRAIN[2]
    steps = ({"type": "model", "text": "x"}, {"type": "tool_call", "tool": "look",
             "arguments": {"at": "door"}}, {"action": "open door"})  # fmt: skip
    t = _traj(item, item.reference, True, steps)
    assert trajectory_kind(t) == "actions"
    text = render_actions(t, item.reference, 100)
    assert "Call: look({'at': 'door'})" in text and "Action: open door" in text
    register_renderer("toy-episode", lambda t, reply, limit: f"Episode -> {reply}")
    t2 = _traj(item, item.reference, True, ({"kind": "toy-episode"},))
    assert _choose([t2], {item.id: item}).edit.content == f"Episode -> {item.reference}"


def test_the_leak_check_allows_a_train_example_and_never_a_val_copy() -> None:
    long = "the quick brown fox jumps over the lazy dog near the river bank"
    val_text = "seven silent swans swam slowly across the cold dark northern lake"
    index = LeakIndex.build(
        {"train": [Item("train-9", long, "x")], "val": [Item("val-9", val_text, "y")]}
    )
    skill = f"- {val_text}\n\n## Examples\n\nInput: {long}\nReply: x\n"
    found = index.find(skill)
    allowed = example_copies(skill, found)
    assert [(x.item_id, x.split) for x in allowed] == [("train-9", "train")]
    assert [x.item_id for x in found if x not in allowed] == ["val-9"]
    val_example = f"## Examples\n\nInput: {val_text}\nReply: y\n"
    assert example_copies(val_example, index.find(val_example)) == ()


def test_examples_on_end_to_end_the_report_names_the_train_item(tmp_path: Path) -> None:
    def target(request: Any) -> str:  # follows a shown reply form, never the rule alone
        word = user_text(request).removeprefix("Word: ").strip()
        return word.upper() if "Reply: " in system_text(request) else word

    def optimizer(request: Any) -> Any:
        assert optimizer_call_kind(request) in ("reflect", "deep_reflect")
        return rules_reply("Answer with the word in capital letters.")

    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {
                "num_epochs": 1,
                "batch_size": 4,
                "examples": "on",
                "max_examples": 1,
                "semantic_merge": False,
                "rank_with_optimizer": False,
                "use_slow_update": False,
                "use_meta_skill": False,
                "reject_leaks": True,
            },
        }
    )
    result = run_training(cfg, optimizer=FunctionBackend(optimizer), target=FunctionBackend(target))
    s = result.summary
    assert s["val_best"] == 1.0 and s["test_best"] == 1.0
    shown = s["examples"]["best_skill"]
    assert len(shown) == 1 and shown[0]["item_id"].startswith("train-")
    assert 0 < s["examples"]["share"] < 1
    best = (result.run_dir / "best_skill.md").read_text()
    assert not any(f"Word: {i.input}\n" in best for i in VAL + TASK.load_split("test"))
    assert "Worked examples" in (result.run_dir / "report.md").read_text()
    assert read_json(result.run_dir / "steps/step_0001/example.json")["edit"]["source"] == (
        "example"
    )


def test_a_failed_train_episode_becomes_its_gold_commands_and_a_val_episode_never_does() -> None:
    """An environment episode (real TinyEnv processes) the target failed: the demonstration is
    the environment's gold sequence for that TRAIN episode, one command per line as the game
    takes it; a val episode has no reference (never kept), so it gives none."""
    import asyncio

    from skillgrad.tasks.environment import EnvironmentTask

    task = EnvironmentTask("skillgrad.testing:TinyEnv", n_train=2, n_val=1, n_test=1, max_steps=2)
    train, val = task.load_split("train"), task.load_split("val")

    async def play() -> list[Trajectory]:
        wrong = FunctionBackend(lambda r: "dance")
        return [await task.rollout(i, "", wrong) for i in (*train, *val)]

    try:
        trajs = asyncio.run(play())
    finally:
        task.close()
    assert all(trajectory_kind(x) == "episode" and not x.score.passed for x in trajs)
    assert all(isinstance(x.reference, list) and x.reference for x in trajs[:2])
    assert trajs[-1].reference is None
    items = {i.id: i for i in train}
    choice = choose_example(
        trajs, items, task, skill="", step=1, tried=[], max_examples=3, max_tokens=200,
        count=approx_tokens, guard=ExampleGuard.build({"val": val}, 8),
    )  # fmt: skip
    assert choice.edit is not None, choice.reason
    chosen = next(x for x in trajs if x.item_id == example_item(choice.edit))
    gold = chosen.reference
    lines = choice.edit.content.split("\n")
    assert lines[0].startswith("Task: ")
    assert lines[2::2] == [f"Action: {a}" for a in gold]
    # before each command, what the game said: the reset, then the replayed gold's answers
    start = next(s["observation"] for s in chosen.steps if s["type"] == "env_reset")
    assert lines[1] == f"Observation: {start}"
    assert lines[3].startswith("Observation: The ") and "is open: a " in lines[3]
    # a budget too small for the observations: the commands alone
    short = choose_example(
        trajs, items, task, skill="", step=1, tried=[], max_examples=3, max_tokens=40,
        count=approx_tokens, guard=ExampleGuard.build({"val": val}, 8),
    )  # fmt: skip
    assert short.edit is not None, short.reason
    assert short.edit.content.split("\n")[1:] == [
        f"Action: {a}"
        for a in next(x.reference for x in trajs if x.item_id == example_item(short.edit))
    ]
    only_val = choose_example(
        trajs[-1:], {i.id: i for i in val}, task, skill="", step=1, tried=[], max_examples=3,
        max_tokens=200, count=approx_tokens, guard=ExampleGuard.build({"val": val}, 8),
    )  # fmt: skip
    assert only_val.edit is None


def _tiny_player(looks: int) -> Any:
    """A TinyEnv player that looks around ``looks`` times, then solves the episode."""
    import re

    from skillgrad.types import ChatRequest

    def reply(request: ChatRequest) -> str:
        said = [m.content for m in request.messages if m.role == "assistant"]
        if len(said) < looks:
            return "look"
        heard = "\n".join(m.content for m in request.messages if m.role == "user")
        if not any(a.startswith("open") for a in said):
            return "open " + re.findall(r"closed (\w+)", heard)[0]
        if not any(a.startswith("take") for a in said):
            return "take " + re.findall(r"a (\w+) inside", heard)[-1]
        return "unlock door"

    return FunctionBackend(reply)


def test_a_self_found_episode_that_fits_with_its_observations_comes_first() -> None:
    """Two passing exploration attempts: the first in order looked around five times before
    solving and fits the budget only as bare commands, the second solved at once and fits with
    what the game answered to each command. The demonstration is the second, observed: a
    command list alone hides what each command answered (Coin Collector's first self-found
    example was eight `look around` and two commands, no observation)."""
    import asyncio

    from skillgrad.tasks.environment import EnvironmentTask
    from skillgrad.tasks.reply_view import user_input
    from skillgrad.train import examples

    task = EnvironmentTask("skillgrad.testing:TinyEnv", n_train=2, n_val=1, n_test=1, max_steps=9)
    train, val = task.load_split("train"), task.load_split("val")

    async def play(looks: int) -> list[Trajectory]:
        return [await task.rollout(i, "", _tiny_player(looks)) for i in train]

    try:
        slow, quick = asyncio.run(play(5)), asyncio.run(play(0))
    finally:
        task.close()
    assert all(t.score.passed for t in (*slow, *quick))
    first = min(range(2), key=lambda k: (len(user_input(slow[k])), slow[k].item_id))
    found = [(slow[first], f"{slow[first].item_id}#x1.1"),
             (quick[1 - first], f"{quick[1 - first].item_id}#x1.1")]  # fmt: skip
    items = {i.id: i for i in train}
    observed, bare = examples._renderers(quick[1 - first])
    reply_slow = examples.example_reply(slow[first], items[slow[first].item_id], task)
    reply_quick = examples.example_reply(quick[1 - first], items[quick[1 - first].item_id], task)
    assert reply_slow is not None and reply_quick is not None
    budget = approx_tokens(observed(quick[1 - first], reply_quick, 400))
    # the case: the first attempt fits only as bare commands, the second fits observed
    assert examples._fit_view(slow[first], reply_slow, budget, approx_tokens, "", observed) is None
    assert examples._fit_view(slow[first], reply_slow, budget, approx_tokens, "", bare)
    choice = choose_example(
        [], items, task, skill="", step=1, tried=[], max_examples=3, max_tokens=budget,
        count=approx_tokens, guard=ExampleGuard.build({"val": val}, 8), found=found,
    )  # fmt: skip
    assert choice.edit is not None, choice.reason
    assert example_item(choice.edit) == quick[1 - first].item_id
    assert "Observation: " in choice.edit.content and "Action: look" not in choice.edit.content
    assert choice.edit.trajectory_ids[1].endswith(f"{quick[1 - first].item_id}#x1.1")
    # with no room for any observation, the first in order comes back, as bare commands
    tight = approx_tokens(bare(slow[first], reply_slow, 60))
    tight = max(tight, approx_tokens(bare(quick[1 - first], reply_quick, 60)))
    again = choose_example(
        [], items, task, skill="", step=1, tried=[], max_examples=3, max_tokens=tight,
        count=approx_tokens, guard=ExampleGuard.build({"val": val}, 8), found=found,
    )  # fmt: skip
    assert again.edit is not None and example_item(again.edit) == slow[first].item_id
    assert "Observation: " not in again.edit.content


def _contradicted_run(tmp_path: Path, example_alone: bool) -> Any:
    """A target that follows a shown reply form unless a rule beside it says otherwise, and an
    optimizer whose only rule contradicts the form (as the 1.5B's did on Pecking Order)."""

    def target(request: Any) -> str:
        word, system = user_text(request).removeprefix("Word: ").strip(), system_text(request)
        return word.upper() if "Reply: " in system and "lower case" not in system else word

    def optimizer(request: Any) -> Any:
        assert optimizer_call_kind(request) in ("reflect", "deep_reflect", "revise")
        return rules_reply("Answer with the word in lower case.")

    train = {"num_epochs": 1, "steps_per_epoch": 1, "batch_size": 4, "examples": "on",
             "max_examples": 1, "semantic_merge": False, "rank_with_optimizer": False,
             "use_slow_update": False, "use_meta_skill": False,
             "example_alone": example_alone}  # fmt: skip
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": train,
        }
    )
    return run_training(cfg, optimizer=FunctionBackend(optimizer), target=FunctionBackend(target))


def test_rules_that_cancel_the_example_are_rejected_and_the_example_alone_is_gated(
    tmp_path: Path,
) -> None:
    result = _contradicted_run(tmp_path, example_alone=True)
    assert result.summary["val_best"] == 1.0 and result.summary["test_best"] == 1.0
    best = (result.run_dir / "best_skill.md").read_text()
    assert "lower case" not in best and "Reply: " in best
    step = read_json(result.run_dir / "history.json")[0]
    assert step["example_alone"] and step["accepted"]
    split = read_json(result.run_dir / "steps/step_0001/split.json")
    assert "lower case" in split["candidate.md"] and not split["gate"]["result"]["accepted"]
    state = read_json(result.run_dir / "runtime_state.json")
    assert any("lower case" in e["content"] for r in state["rejected_buffer"] for e in r["edits"])
    assert "accepted (the example alone)" in (result.run_dir / "report.md").read_text()


def test_without_example_alone_the_contradicted_candidate_is_only_rejected(tmp_path: Path) -> None:
    result = _contradicted_run(tmp_path, example_alone=False)
    assert result.summary["val_best"] == 0.0
    assert not (result.run_dir / "steps/step_0001/split.json").exists()


ROOM = (
    "You are in the kitchen. In one part of the room you see a stove. There is also an oven. "
    "You also see a fridge that is closed. In another part of the room you see a counter. "
    "To the South you see the pantry. To the East you see the corridor."
)


def test_a_cut_observation_keeps_the_sentence_that_names_what_the_next_command_acts_on() -> None:
    head = shown_observation(ROOM, "look around")  # nothing to find: the start, cut at a word
    assert head.startswith("You are in the kitchen.") and head.endswith(" …")
    shown = shown_observation(ROOM, "move east")
    assert shown.endswith("… To the East you see the corridor.") and len(shown) <= 160
    assert shown.startswith("You are in the kitchen. In one part")
    # named in the start already, named nowhere, or a short observation: as before
    assert shown_observation(ROOM, "open fridge") == head
    assert shown_observation(ROOM, "move west") == head
    assert shown_observation("You take the coin.", "move east") == "You take the coin."
    # a sentence too long to leave room for the start: the start alone
    long_sentence = "To the East you see " + "a very long corridor " * 8 + "."
    assert shown_observation(ROOM + " " + long_sentence, "move east", 160).endswith(
        "… To the East you see the corridor."
    )
    assert shown_observation("x " * 100 + long_sentence, "move east") == shown_observation(
        "x " * 100 + long_sentence, "look"
    )


def test_a_tasks_example_context_comes_first_and_a_failing_one_is_left_out() -> None:
    item = TRAIN[0]
    trajs = [_traj(item, item.reference, passed=True)]
    shown = _choose(trajs, {item.id: item}, context=lambda i: f"Alphabet: latin ({i.id})").edit
    assert shown is not None
    assert shown.content == (
        f"Alphabet: latin ({item.id})\nInput: Word: {item.input}\nReply: {item.reference}"
    )

    def broken(i: Item) -> str:
        raise KeyError("functions")

    # a line that could read as markup of the skill (a heading here) is labelled, and cut
    lines = _choose(trajs, {item.id: item}, max_tokens=400,
                    context=lambda i: "# Rules\n" + "x " * 300).edit  # fmt: skip
    assert lines is not None and lines.content.startswith("Context: # Rules x x")
    assert len(lines.content.split("\n")[0]) <= 200
    assert "## " not in lines.content and "\n#" not in lines.content

    plain = _choose(trajs, {item.id: item}, context=broken).edit
    assert (
        plain is not None and plain.content == f"Input: Word: {item.input}\nReply: {item.reference}"
    )


def test_a_code_reply_with_blank_lines_is_one_fenced_demonstration() -> None:
    """A passing program holds blank lines (HumanEval's do): it is shown in a fence, and the
    Examples section reads it as one demonstration, beside another one after it."""
    a, b = TRAIN[0], TRAIN[1]
    code = "def f(x):\n    y = x + 1\n\n    return y\n\n\n# done"
    choice = _choose([_traj(a, code, passed=True)], {a.id: a}, max_tokens=200)
    assert choice.edit is not None
    text = choice.edit.content
    assert code in text and text.count("\n\n") >= 2
    skill, results = Skill("- Be brief.\n").apply([choice.edit])
    assert results[0].status == "applied", results[0].reason
    assert example_blocks(skill.text) == [text]
    second = _choose([_traj(b, b.reference, True)], {b.id: b}, skill=skill.text, max_tokens=200)
    assert second.edit is not None
    skill, _ = skill.apply([second.edit])
    assert example_blocks(skill.text) == [text, second.edit.content]
    # its lines are the section's (never rules); "# done" inside the fence is no heading
    assert {"return y", "# done"} <= example_lines(skill.text)


def test_a_rendering_that_would_read_as_two_demonstrations_is_not_offered() -> None:
    item = TRAIN[3]
    register_renderer("toy-split", lambda t, reply, limit: f"Input: {limit}\n\nReply: {reply}")
    t = _traj(item, item.reference, True, ({"kind": "toy-split"},))
    choice = _choose([t], {item.id: item})
    assert choice.edit is None and choice.reason == "no train trajectory gives a demonstration"


def test_without_examples_cuts_every_examples_section_and_nothing_else() -> None:
    text = (
        "# Rules\n- Use upper case.\n\n## Examples\nInput: a\nReply: A\n\n### More\nx\n\n"
        "## Tail\n- b\n"
    )
    assert without_examples(Skill(text)).text == "# Rules\n- Use upper case.\n\n## Tail\n- b\n"
    only = Skill("# Examples\nInput: a\nReply: A\n")
    assert without_examples(only).text == ""
    plain = Skill("- Use upper case.\n")
    assert without_examples(plain) is plain
    fenced = Skill("- rule\n\n```\n# Examples\n```\n")  # not a heading: nothing to cut
    assert without_examples(fenced) is fenced


def test_without_examples_cuts_a_packages_skill_md_and_keeps_its_other_files() -> None:
    files = {
        "SKILL.md": "---\nname: s\ndescription: d\n---\n- rule\n\n# Examples\nReply: A\n",
        "ref/notes.md": "# Examples\nkept: a reference file is not the demonstration section\n",
    }
    bundle = Skill(SkillPackage.from_files(files).bundle())
    cut = SkillPackage.from_bundle(without_examples(bundle).text)
    assert cut.file_map() == {**files, "SKILL.md": "---\nname: s\ndescription: d\n---\n- rule\n"}
