"""Exploration (``train.explore``), self-found worked examples, contrast rules and
``use_gold: false``: the whole loop on real TinyEnv processes and on the toy task, with the
shipped fakes. What each fake model received is read back per ledger stage."""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillgrad.callbacks import describe_event
from skillgrad.config import load_config
from skillgrad.errors import PermanentModelError
from skillgrad.models.context import current_context
from skillgrad.prompts import render_prompt
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.testing import (
    FunctionBackend,
    ToyTask,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.train.explore import exploration_seed
from skillgrad.types import ChatRequest, Item, Message, Score, Trajectory

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_env import containers, mixed_seed
from fakes_env import explorer as env_player

RETRY = "## Your previous attempt at this task"
CONTRAST_RULE = "Open what is closed first, then take what is inside it, then use it."
REFLECT_RULE = "Look around before you act."


class Recorder:
    """A fake model answering with ``reply`` that keeps (ledger stage, request) per call."""

    def __init__(self, reply: Callable[[ChatRequest], Any]) -> None:
        self.calls: list[tuple[str, ChatRequest]] = []
        self.reply = reply
        self.backend = FunctionBackend(self._answer)

    def _answer(self, request: ChatRequest) -> Any:
        self.calls.append((current_context().stage, request))
        return self.reply(request)

    def stages(self, pred: Callable[[ChatRequest], bool]) -> set[str]:
        return {stage for stage, r in self.calls if pred(r)}


def optimizer_reply(request: ChatRequest) -> Any:
    kind = optimizer_call_kind(request)
    assert kind in ("reflect", "deep_reflect", "contrast", "revise"), kind
    return rules_reply(CONTRAST_RULE if kind == "contrast" else REFLECT_RULE)


def _env_cfg(
    tmp_path: Path,
    use_gold: bool,
    explore: str,
    name: str = "run",
    seed: int = 0,
    command_forms: str = "on",
) -> Any:
    return load_config(
        data={
            "env": {
                "task": "environment",
                "output_root": str(tmp_path),
                "run_name": name,
                "options": {
                    "env": "skillgrad.testing:TinyEnv",
                    "n_train": 2,
                    "n_val": 2,
                    "n_test": 1,
                    "max_steps": 4,
                    "use_gold": use_gold,
                    "seed": seed,
                },
            },
            "train": {
                "num_epochs": 1,
                "steps_per_epoch": 1,
                "batch_size": 2,
                "examples": "on",
                "explore": explore,
                "command_forms": command_forms,
                "semantic_merge": False,
                "rank_with_optimizer": False,
                "use_slow_update": False,
                "use_meta_skill": False,
                # these tests are about exploration, not the gate: strict accepts on 2 val items
                "gate_rule": "strict",
            },
        }
    )


def _run_env_seed(tmp_path: Path, seed: int) -> Any:
    target, optimizer = Recorder(env_player), Recorder(optimizer_reply)
    cfg = _env_cfg(tmp_path, use_gold=False, explore="on", seed=seed)
    result = run_training(cfg, optimizer=optimizer.backend, target=target.backend)
    return result, target, optimizer


def _run_env(tmp_path: Path, use_gold: bool, explore: str, player: Any = env_player) -> Any:
    target, optimizer = Recorder(player), Recorder(optimizer_reply)
    result = run_training(
        _env_cfg(tmp_path, use_gold, explore),
        optimizer=optimizer.backend,
        target=target.backend,
    )
    return result, target, optimizer


def test_an_exploration_success_becomes_a_gated_self_found_example(tmp_path: Path) -> None:
    result, target, optimizer = _run_env(tmp_path, use_gold=False, explore="on")
    run, s = result.run_dir, result.summary
    assert s["val_initial"] == 0.0 and s["val_best"] == 1.0 and s["test_best"] == 1.0
    # both failed train episodes were solved by their first exploration attempt
    rows = read_jsonl(run / "steps/step_0001/exploration.jsonl")
    assert [(r["attempt"], r["passed"]) for r in rows] == [(1, True), (1, True)]
    assert all(r["item_id"].startswith("train-") for r in rows)
    record = read_json(run / "history.json")[0]
    assert (record["explore_attempts"], record["explore_found"]) == (2, 2) and record["accepted"]
    # the example is the target's own attempt, recorded self-found, and it was gated
    edit = read_json(run / "steps/step_0001/example.json")["edit"]
    assert "self-found" in edit["rationale"] and edit["trajectory_ids"][1].endswith("#x1.1")
    shown = s["examples"]["best_skill"]
    assert len(shown) == 1 and shown[0]["origin"] == "self-found"
    assert shown[0]["attempt"] == f"{shown[0]['item_id']}#x1.1"
    best = (run / "best_skill.md").read_text()
    assert "Action: open " in best and "Observation: You are in a room" in best
    # the valid actions were shown during exploration only, never in the skill
    assert target.stages(lambda r: "Valid actions:" in request_text(r)) == {"explore"}
    assert "Valid actions" not in best and "look |" not in best
    # the contrastive pair reached the optimizer: the failed and the passing attempt
    contrast = [r for _, r in optimizer.calls if optimizer_call_kind(r) == "contrast"]
    assert len(contrast) == 1
    prompt = user_text(contrast[0])
    for row in rows:
        assert f"episode {row['item_id']}: score 0.00 (FAIL)" in prompt
        assert f"episode {row['item_id']}: score 1.00 (PASS)" in prompt
    assert "Reference actions" not in prompt  # use_gold off: no gold anywhere
    # an episode is compared as a procedure in words, never by one attempt's step numbers
    system = system_text(contrast[0])
    assert render_prompt("contrast_episodes").strip() in system
    assert "no step number" in system and "which step" not in system
    records = read_json(run / "steps/step_0001/reflections.json")
    assert [r["mode"] for r in records] == ["shallow", "contrast"]
    assert records[1]["attempts"] == [r["cache_id"] for r in rows]
    assert CONTRAST_RULE in (run / "steps/step_0001/candidate.md").read_text()
    report = (run / "report.md").read_text()
    assert "- step 1: 2 failed train items solved in 2 attempts" in report
    assert f"self-found: exploration attempt `{shown[0]['attempt']}`" in report


def test_contrast_off_leaves_successes_to_examples_and_forms(tmp_path: Path) -> None:
    """The ablation switch of the rules written from the difference: exploration still solves
    and its success is still a gated example, but no contrast call is made."""
    target, optimizer = Recorder(env_player), Recorder(optimizer_reply)
    cfg = _env_cfg(tmp_path, use_gold=False, explore="on")
    cfg = cfg.model_copy(update={"train": cfg.train.model_copy(update={"contrast": "off"})})
    result = run_training(cfg, optimizer=optimizer.backend, target=target.backend)
    rows = read_jsonl(result.run_dir / "steps/step_0001/exploration.jsonl")
    assert [(r["attempt"], r["passed"]) for r in rows] == [(1, True), (1, True)]
    assert not [r for _, r in optimizer.calls if optimizer_call_kind(r) == "contrast"]
    records = read_json(result.run_dir / "steps/step_0001/reflections.json")
    assert [r["mode"] for r in records] == ["shallow"]
    assert result.summary["examples"]["best_skill"][0]["origin"] == "self-found"
    assert CONTRAST_RULE not in (result.run_dir / "best_skill.md").read_text()
    # the preflight no longer counts a contrast call per step: 2 optimizer calls fewer (the
    # estimate doubles every call for re-asks) than the same run with contrast on
    on = _env_cfg(tmp_path, use_gold=False, explore="on", name="on")
    again = run_training(on, optimizer=Recorder(optimizer_reply).backend,
                         target=Recorder(env_player).backend)  # fmt: skip
    estimates = [
        next(e for e in read_jsonl(r.run_dir / "events.jsonl") if e["event"] == "preflight")
        for r in (result, again)
    ]
    assert estimates[1]["calls"]["optimizer"] - estimates[0]["calls"]["optimizer"] == 2


def test_a_contrast_rule_naming_one_episodes_object_is_refused(tmp_path: Path) -> None:
    seed = mixed_seed()
    first = containers(seed)[0]
    one = f"Open the {first} first, then take what is inside it."

    def optimizer(request: ChatRequest) -> Any:
        kind = optimizer_call_kind(request)
        return rules_reply(one, CONTRAST_RULE) if kind == "contrast" else optimizer_reply(request)

    target = Recorder(env_player)
    result = run_training(
        _env_cfg(tmp_path, use_gold=False, explore="on", seed=seed),
        optimizer=FunctionBackend(optimizer),
        target=target.backend,
    )
    screened = read_json(result.run_dir / "steps/step_0001/selection.json")["screened"]
    refused = [d for d in screened if d["edit"]["content"].endswith(one)]
    assert len(refused) == 1, screened
    assert refused[0]["reason"].startswith(f"about one attempt: names {first!r}")
    candidate = (result.run_dir / "steps/step_0001/candidate.md").read_text()
    assert CONTRAST_RULE in candidate and one not in candidate


def test_solved_episodes_become_a_gated_line_of_command_forms(tmp_path: Path) -> None:
    seed = mixed_seed()
    result, _, _ = _run_env_seed(tmp_path, seed)
    candidate = (result.run_dir / "steps/step_0001/candidate.md").read_text()
    line = next(x for x in candidate.splitlines() if x.startswith("- Commands that solved"))
    # the container differs between the episodes: a placeholder; the door is every episode's
    assert "`open <object>`" in line and "`unlock door`" in line
    assert "<object> stands for a word that differs from episode to episode" in line
    assert not any(c in line for c in containers(seed))
    applied = read_json(result.run_dir / "steps/step_0001/apply_report.json")
    forms = [r for r in applied if r["edit"]["source"] == "commands"]
    assert len(forms) == 1 and forms[0]["status"] == "applied"
    assert "solved train episode" in forms[0]["edit"]["rationale"]
    assert line in (result.run_dir / "best_skill.md").read_text()  # gated and accepted with it
    # a run with the switch off has no such line
    off = run_training(
        _env_cfg(tmp_path, use_gold=False, explore="on", name="off", seed=seed,
                 command_forms="off"),
        optimizer=FunctionBackend(optimizer_reply),
        target=Recorder(env_player).backend,
    )  # fmt: skip
    assert "Commands that solved" not in (off.run_dir / "best_skill.md").read_text()


def test_use_gold_must_be_a_boolean() -> None:
    from skillgrad.errors import ConfigError
    from skillgrad.tasks.environment import EnvironmentTask

    with pytest.raises(ConfigError, match="use_gold must be true or false"):
        EnvironmentTask("skillgrad.testing:TinyEnv", use_gold="no")  # type: ignore[arg-type]


def request_text(request: ChatRequest) -> str:
    return "\n".join(m.content for m in request.messages)


@pytest.mark.parametrize("use_gold", [True, False])
def test_use_gold_false_hides_the_gold_from_every_prompt_and_example(
    tmp_path: Path, use_gold: bool
) -> None:
    never = Recorder(lambda r: "look")
    optimizer = Recorder(optimizer_reply)
    result = run_training(
        _env_cfg(tmp_path, use_gold, explore="off"),
        optimizer=optimizer.backend,
        target=never.backend,
    )
    run = result.run_dir
    trajs = read_jsonl(run / "steps/step_0001/trajectories.jsonl")
    golds = [t["reference"] for t in trajs]
    prompts = "\n".join(request_text(r) for _, r in optimizer.calls)
    example = read_json(run / "steps/step_0001/example.json")
    if use_gold:  # the control: with gold on, the gold reaches the optimizer and the example
        assert all(golds) and "Reference actions that solve it" in prompts
        assert example["edit"] is not None and "Action: open" in example["edit"]["content"]
        return
    assert golds == [None, None]
    assert not any(s["type"] == "env_gold" for t in trajs for s in t["steps"])
    assert "Reference actions" not in prompts
    # no gold command at all ("open ..." is listed as an accepted command where it went wrong)
    assert "unlock door" not in prompts and "take " not in prompts
    assert example["edit"] is None and example["reason"]


def test_a_killed_run_resumes_its_exploration_from_the_cache(tmp_path: Path) -> None:
    def dies_at_the_gate(request: ChatRequest) -> str:
        if current_context().stage == "gate":
            raise PermanentModelError("the target went away")
        return env_player(request)

    cfg = _env_cfg(tmp_path, use_gold=False, explore="on")
    first = Recorder(dies_at_the_gate)
    with pytest.raises(PermanentModelError):
        run_training(cfg, optimizer=Recorder(optimizer_reply).backend, target=first.backend)
    assert "explore" in first.stages(lambda r: True)
    again = Recorder(env_player)
    result = run_training(cfg, optimizer=Recorder(optimizer_reply).backend, target=again.backend)
    assert "explore" not in again.stages(lambda r: True)  # replayed, nothing paid again
    assert result.summary["examples"]["best_skill"][0]["origin"] == "self-found"
    assert read_json(result.run_dir / "history.json")[0]["explore_found"] == 2


def _toy_cfg(tmp_path: Path, **train: Any) -> Any:
    base = {"num_epochs": 1, "steps_per_epoch": 1, "batch_size": 4, "examples": "on",
            "max_examples": 1, "explore": "on", "semantic_merge": False,
            "rank_with_optimizer": False, "use_slow_update": False,
            "use_meta_skill": False}  # fmt: skip
    return load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {**base, **train},
        }
    )


def toy_retrier(request: ChatRequest) -> str:
    """Echoes the word as given, and in upper case once it has seen its failed attempt (a
    retry) or a worked example in its skill."""
    word, system = user_text(request).removeprefix("Word: ").strip(), system_text(request)
    return word.upper() if RETRY in system or "Reply: " in system else word


def toy_optimizer(request: ChatRequest) -> Any:
    assert optimizer_call_kind(request) in ("reflect", "deep_reflect", "contrast", "revise")
    return rules_reply("Answer with the word only.")


def test_a_retry_sees_its_failed_attempt_and_never_a_withheld_reference(tmp_path: Path) -> None:
    target, optimizer = Recorder(toy_retrier), FunctionBackend(toy_optimizer)
    cfg = _toy_cfg(tmp_path, show_reference=False)
    result = run_training(cfg, optimizer=optimizer, target=target.backend)
    rows = read_jsonl(result.run_dir / "steps/step_0001/exploration.jsonl")
    assert {(r["attempt"], r["retry"], r["passed"]) for r in rows} == {
        (1, False, False),
        (2, True, True),
    }
    retries = [r for stage, r in target.calls if stage == "explore" and RETRY in system_text(r)]
    assert len(retries) == len(rows) // 2
    for r in retries:
        word = user_text(r).removeprefix("Word: ").strip()
        assert f"Input: Word: {word}" in system_text(r)  # its own attempt, with the feedback
        assert word.upper() not in system_text(r)  # the reference is withheld
        assert "(withheld)" in system_text(r)
    assert not any(RETRY in system_text(r) for s, r in target.calls if s != "explore")
    # the self-found example is preferred over a reference-built one, and never holds the retry
    edit = read_json(result.run_dir / "steps/step_0001/example.json")["edit"]
    assert "self-found" in edit["rationale"] and RETRY not in edit["content"]
    assert RETRY not in (result.run_dir / "best_skill.md").read_text()
    # the preflight estimate counts the exploration calls (it bounds what the run used)
    events = read_jsonl(result.run_dir / "events.jsonl")
    pre = next(e for e in events if e["event"] == "preflight")
    usage = result.summary["usage"]
    for role in ("optimizer", "target"):
        assert pre["calls"][role] >= usage[role]["calls"] > 0
    explored = next(e for e in events if e["event"] == "explore")
    assert (explored["items"], explored["attempts"], explored["found"]) == (4, 8, 4)
    # a reply is compared by its form and content: the reply prompt, not the episode one
    contrast = [r for r in optimizer.calls if optimizer_call_kind(r) == "contrast"]
    assert contrast and all(
        render_prompt("contrast_replies").strip() in system_text(r)
        and render_prompt("contrast_episodes").strip() not in system_text(r)
        for r in contrast
    )


def test_a_retry_sees_every_earlier_failure_and_a_repeat_samples_wider(tmp_path: Path) -> None:
    """A target that makes the same mistake every time: each repeat is recorded and raises the
    temperature of the attempts after it; a retry shows the repeated attempt once, counted."""
    target = Recorder(lambda r: user_text(r).removeprefix("Word: ").strip())
    cfg = _toy_cfg(tmp_path, explore_attempts=4, batch_size=1)
    result = run_training(cfg, optimizer=FunctionBackend(toy_optimizer), target=target.backend)
    rows = read_jsonl(result.run_dir / "steps/step_0001/exploration.jsonl")
    assert [(r["attempt"], r["retry"], r["repeat"]) for r in rows] == [
        (1, False, False),
        (2, True, True),
        (3, True, True),
        (4, True, True),
    ]
    assert [r["temperature"] for r in rows] == pytest.approx([0.7, 0.7, 1.0, 1.3])
    explored = [r for stage, r in target.calls if stage == "explore"]
    assert [r.temperature for r in explored] == pytest.approx([0.7, 0.7, 1.0, 1.3])
    second, third = system_text(explored[1]), system_text(explored[2])
    assert RETRY in second and "made" not in second  # one failure: the single-attempt form
    assert "## Your previous attempts at this task" in third
    assert "### Attempt 1 (made 2 times, the same way each time)" in third
    assert "### Attempt 2" not in third  # the same attempt is shown once
    events = read_jsonl(result.run_dir / "events.jsonl")
    explore_event = next(e for e in events if e["event"] == "explore")
    assert explore_event["repeats"] == 3
    assert describe_event(explore_event) == (
        logging.INFO,
        "step 1 exploration: 0 of 1 failed train items solved in 4 attempts, 3 repeating an "
        "earlier one",
    )
    assert read_json(result.run_dir / "history.json")[0]["explore_repeats"] == 3
    report = (result.run_dir / "report.md").read_text()
    assert "solved in 4 attempts (3 repeated an earlier attempt exactly)" in report


def test_a_retry_shows_the_most_recent_distinct_failures_oldest_first() -> None:
    from skillgrad.train.explore import RETRY_SHOWN, distinct_failures, retry_skill

    def failed(reply: str) -> Trajectory:
        return Trajectory("i", "h", (Message("user", "Word: x"),), reply, Score(0, False, "no"))

    tried = [failed(r) for r in ("a", "b", "A ", "c", "d")]
    shown = distinct_failures(tried)
    assert len(shown) == RETRY_SHOWN == 3
    assert [(t.output.strip().lower(), n) for t, n in shown] == [("a", 2), ("c", 1), ("d", 1)]
    prompt = retry_skill("Be brief.", tried, show_reference=True)
    assert prompt.startswith("Be brief.\n\n## Your previous attempts at this task")
    order = [prompt.index(f"Your reply: '{r}'") for r in ("A ", "c", "d")]
    assert order == sorted(order) and "Your reply: 'b'" not in prompt


def test_the_contrast_pair_is_the_failure_the_passing_retry_corrected() -> None:
    """A retry that passes is paired with the attempt it saw (both made with the exploration's
    affordances); a first attempt that passes is paired with the batch's failed trajectory."""
    from skillgrad.train.explore import Attempt, Exploration

    def traj(item: str, reply: str, passed: bool) -> Trajectory:
        score = Score(float(passed), passed, "ok" if passed else "no")
        return Trajectory(item, "h", (Message("user", "Word: x"),), reply, score)

    batch = [traj("a", "batch-a", False), traj("b", "batch-b", False)]
    attempts = (
        Attempt("a", 1, "a#x1.1", traj("a", "first-a", False), False),
        Attempt("a", 2, "a#x1.2", traj("a", "second-a", False), True),
        Attempt("a", 3, "a#x1.3", traj("a", "third-a", True), True),
        Attempt("b", 1, "b#x1.1", traj("b", "first-b", True), False),
    )
    pairs = Exploration(attempts).pairs(batch)
    assert [(f.output, a.trajectory.output) for f, a in pairs] == [
        ("second-a", "third-a"),
        ("batch-b", "first-b"),
    ]


def test_a_better_but_failing_attempt_is_paired_with_the_lower_one_before_it() -> None:
    """``Exploration.improved``: per failed item no attempt solved, the best-scoring attempt
    beside the nearest attempt before it that scored less (else the batch's failure); an item
    nothing improved, a solved item and an errored attempt give no pair; largest gain first."""
    from skillgrad.train.explore import Attempt, Exploration

    def traj(item: str, reply: str, value: float, error: str | None = None) -> Trajectory:
        score = Score(value, value >= 1.0, f"score {value}")
        return Trajectory(item, "h", (Message("user", "Word: x"),), reply, score, error=error)

    batch = [traj(i, f"batch-{i}", 0.0) for i in "abcde"]
    attempts = (
        Attempt("a", 1, "a#x1.1", traj("a", "a1", 0.25), False),
        Attempt("a", 2, "a#x1.2", traj("a", "a2", 0.5), True),
        Attempt("a", 3, "a#x1.3", traj("a", "a3", 0.25), True),
        Attempt("b", 1, "b#x1.1", traj("b", "b1", 0.0), False),  # nothing better
        Attempt("b", 2, "b#x1.2", traj("b", "b2", 0.0), True),
        Attempt("c", 1, "c#x1.1", traj("c", "c1", 0.75), False),  # the first attempt improved
        Attempt("d", 1, "d#x1.1", traj("d", "d1", 1.0), False),  # solved: a pair of its own
        Attempt("e", 1, "e#x1.1", traj("e", "e1", 0.9, error="target call failed"), False),
    )
    explored = Exploration(attempts)
    pairs = explored.improved(batch)
    assert [(low.output, best.trajectory.output) for low, best in pairs] == [
        ("batch-c", "c1"),  # +0.75
        ("a1", "a2"),  # +0.25: the attempt a2's retry saw
    ]
    assert [(f.output, a.cache_id) for f, a in explored.pairs(batch)] == [("batch-d", "d#x1.1")]


def _partial_player(request: ChatRequest) -> str:
    """Under exploration (the valid actions listed) makes TinyEnv's first right move, then only
    looks: a third of the episode, never a pass; without the list it only looks."""
    user = user_text(request)
    moves = sum(m.role == "assistant" for m in request.messages)
    if "Valid actions:" in user and moves == 0:
        listed = user.split("Valid actions:", 1)[1].strip().split(" | ")
        return next(a for a in listed if a != "look")
    return "look"


@pytest.mark.parametrize("partial", ["on", "off"])
def test_a_better_scoring_attempt_reaches_the_optimizer_only_with_contrast_partial(
    tmp_path: Path, partial: str
) -> None:
    """A graded environment whose exploration never passes: with ``train.contrast_partial`` on
    the optimizer reads each failure beside the attempt that scored higher (0.00 then 0.33) and
    its rule joins the candidate, and the command-forms line lists what the better attempts
    typed up to their peak (the right move, not the looks after it) as commands that "solved
    or advanced" an episode; off, no contrast call is made and no line. The report counts
    them."""
    target, optimizer = Recorder(_partial_player), Recorder(optimizer_reply)
    cfg = _env_cfg(tmp_path, use_gold=False, explore="on")
    cfg.train.contrast_partial = partial
    result = run_training(cfg, optimizer=optimizer.backend, target=target.backend)
    run = result.run_dir
    rows = read_jsonl(run / "steps/step_0001/exploration.jsonl")
    assert rows and not any(r["passed"] for r in rows)
    assert {round(r["score"], 2) for r in rows} == {0.33}
    record = read_json(run / "history.json")[0]
    assert record["explore_found"] == 0 and record["explore_better"] == 2
    contrast = [r for _, r in optimizer.calls if optimizer_call_kind(r) == "contrast"]
    report = (run / "report.md").read_text()
    assert "2 more scored higher than their failure without passing" in report
    candidate = (run / "steps/step_0001/candidate.md").read_text()
    if partial == "off":
        assert contrast == []
        assert CONTRAST_RULE not in candidate and "Commands that solved" not in candidate
        return
    line = next(x for x in candidate.splitlines() if x.startswith("- Commands that solved or "))
    assert line.startswith("- Commands that solved or advanced earlier episodes, exactly as typed")
    assert "`open " in line and "`look`" not in line, line
    assert len(contrast) == 1
    prompt = user_text(contrast[0])
    for item in {r["item_id"] for r in rows}:
        low = prompt.index(f"episode {item}: score 0.00 (FAIL)")
        assert prompt.index(f"episode {item}: score 0.33 (FAIL)") > low
    assert "scored higher and still failed" in system_text(contrast[0])
    assert CONTRAST_RULE in candidate


class OneMovePlayer:
    """Plays TinyEnv with the valid actions listed but makes one right move per attempt (an
    attempt is one sampling seed): from the start it never passes (1/3); resumed after its
    right moves, it gets one further each time."""

    def __init__(self) -> None:
        self.moved: set[int | None] = set()

    def __call__(self, request: ChatRequest) -> str:
        user = user_text(request)
        if "Valid actions:" not in user or request.seed in self.moved:
            return "look"
        self.moved.add(request.seed)
        listed = user.split("Valid actions:", 1)[1].strip().split(" | ")
        return next(a for a in listed if a != "look")


@pytest.mark.parametrize("resume", ["on", "off"])
def test_a_resumed_attempt_starts_where_the_best_attempt_progressed(
    tmp_path: Path, resume: str
) -> None:
    """``train.explore_resume``: each attempt after progress replays the best attempt's
    commands up to its last rise (no model call for them) and the target goes on from there:
    1/3, 2/3, then solved at the third attempt of a budget of 2 (each attempt that raised the
    score earned one more), a self-found example of the target's own commands. Off, every
    attempt starts over, 2 attempts, and none passes."""
    player = OneMovePlayer()
    target, optimizer = Recorder(player), Recorder(optimizer_reply)
    cfg = _env_cfg(tmp_path, use_gold=False, explore="on")
    cfg.train.explore_resume, cfg.train.explore_attempts = resume, 2
    result = run_training(cfg, optimizer=optimizer.backend, target=target.backend)
    rows = read_jsonl(result.run_dir / "steps/step_0001/exploration.jsonl")
    per_item: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        per_item.setdefault(r["item_id"], []).append(r)
    assert len(per_item) == 2
    for tried in per_item.values():
        if resume == "off":
            assert [round(r["score"], 2) for r in tried] == [0.33] * 2
            assert [r["resumed"] for r in tried] == [0, 0]
            continue
        assert [round(r["score"], 2) for r in tried] == [0.33, 0.67, 1.0]
        assert [r["resumed"] for r in tried] == [0, 1, 2] and tried[-1]["passed"]
        first, second, third = (_commands(r) for r in tried)
        assert second[0] == first[0] and third[:2] == second[:2]
        # replayed commands do not use up the target's turns: 1 replayed + max_steps (4) own
        assert len(first) == 4 and len(second) == 1 + 4
        assert third[2] == "unlock door" and len(third) == 3
        # the replayed commands were never asked of the model: its first call in an attempt
        # resumed after k commands already holds k turns
        for r in tried:
            seed = exploration_seed(0, 1, r["item_id"], r["attempt"])
            turns = [_turns(q) for stage, q in target.calls if q.seed == seed]
            assert turns and min(turns) == r["resumed"], (r["attempt"], turns)
    if resume == "on":
        record = read_json(result.run_dir / "history.json")[0]
        assert record["explore_found"] == 2
        example = read_json(result.run_dir / "steps/step_0001/example.json")["edit"]
        assert "self-found" in example["rationale"]  # the resumed pass, offered as an example
    # the preflight bound counts the earned attempts too
    events = read_jsonl(result.run_dir / "events.jsonl")
    pre = next(e for e in events if e["event"] == "preflight")
    assert pre["calls"]["target"] >= result.summary["usage"]["target"]["calls"] > 0
    bounds[resume] = pre["calls"]["target"]
    if len(bounds) == 2:  # an episode's earned attempts and redraws raise the bound
        assert bounds["on"] > bounds["off"]


def test_an_attempt_earns_another_only_by_raising_the_score(tmp_path: Path) -> None:
    """With ``train.explore_resume`` and a budget of 2: a target that makes one right move from
    the start and none after a resume raises the score once (1/3), earns one attempt, and
    stops after 3 (the resumed attempts stay at 1/3 and earn nothing)."""
    cfg = _env_cfg(tmp_path, use_gold=False, explore="on")
    cfg.train.explore_resume, cfg.train.explore_attempts = "on", 2
    result = run_training(
        cfg, optimizer=FunctionBackend(optimizer_reply), target=FunctionBackend(_partial_player)
    )
    rows = read_jsonl(result.run_dir / "steps/step_0001/exploration.jsonl")
    for item in {r["item_id"] for r in rows}:
        tried = [r for r in rows if r["item_id"] == item]
        assert [round(r["score"], 2) for r in tried] == [0.33] * 3
        assert [r["resumed"] for r in tried] == [0, 1, 1]


def _commands(row: dict[str, Any]) -> list[str]:
    return [m["content"] for m in row["trajectory"]["messages"] if m["role"] == "assistant"]


def _turns(request: ChatRequest) -> int:
    return sum(m.role == "assistant" for m in request.messages)


_FORK = (
    "class Fork:\n"
    "    # go, then right at the fork, then finish; left at the fork loses the point and the game\n"
    "    def reset(self, *, seed=None, options=None):\n"
    "        self.done, self.lost = [], False\n"
    "        return 'A path.', self.info()\n"
    "    def info(self):\n"
    "        valid = {0: ['go'], 1: ['left', 'right'], 2: ['finish']}.get(len(self.done), [])\n"
    "        score = 0.0 if self.lost else len(self.done) / 3\n"
    "        return {'valid_actions': valid, 'score': score, 'success': len(self.done) == 3,\n"
    "                'task': 'Reach the end.'}\n"
    "    def step(self, action):\n"
    "        want = ['go', 'right', 'finish'][len(self.done)]\n"
    "        if action == 'left' and len(self.done) == 1:\n"
    "            self.lost = True\n"
    "            return 'You fall.', 0.0, True, False, self.info()\n"
    "        if action == want:\n"
    "            self.done.append(action)\n"
    "        return 'Step %d.' % len(self.done), 0.0, len(self.done) == 3, False, self.info()\n"
)


bounds: dict[str, int] = {}  # the fork runs' preflight bounds, by train.explore_resume


@pytest.mark.parametrize("resume", ["on", "off"])
def test_a_command_that_lost_points_after_the_same_commands_is_drawn_again(
    tmp_path: Path, resume: str
) -> None:
    """With ``train.explore_resume``: the target's first draw at the fork is always the losing
    ``left`` (every attempt's own seed), its draw with another seed ``right``. The first
    attempt loses at the fork; the second, resumed after ``go``, draws ``left`` again, which
    an earlier attempt lost points with after the same commands, so it is drawn again (with
    the next seed, hotter), and passes. Off: both attempts lose at the fork."""
    (tmp_path / "fork.py").write_text(_FORK, encoding="utf-8")
    cfg = _env_cfg(tmp_path, use_gold=False, explore="on")
    cfg.env.options["env"] = "fork.py:Fork"
    cfg.base_dir = str(tmp_path)
    cfg.train.explore_resume, cfg.train.explore_attempts = resume, 2
    went_left: set[int | None] = set()
    redraw_temperatures: list[float] = []

    def player(request: ChatRequest) -> str:
        user = user_text(request)
        if "Valid actions:" not in user:
            return "wait"
        listed = user.split("Valid actions:", 1)[1].strip().split(" | ")
        if listed != ["left", "right"]:
            return listed[0]
        if request.seed is not None and request.seed - 1 in went_left:  # drawn again
            redraw_temperatures.append(request.temperature)
            return "right"
        went_left.add(request.seed)
        return "left"

    target = Recorder(player)
    result = run_training(cfg, optimizer=FunctionBackend(optimizer_reply), target=target.backend)
    rows = read_jsonl(result.run_dir / "steps/step_0001/exploration.jsonl")
    assert len({r["item_id"] for r in rows}) == 2
    for item in {r["item_id"] for r in rows}:
        tried = [r for r in rows if r["item_id"] == item]
        if resume == "off":
            assert [r["passed"] for r in tried] == [False, False]
            assert [r["redrawn"] for r in tried] == [0, 0]
            assert [(r["end"], r["fell"]) for r in tried] == [("terminated", True)] * 2
            continue
        assert [r["passed"] for r in tried] == [False, True]
        assert [(r["end"], r["fell"]) for r in tried] == [("terminated", True), ("solved", False)]
        assert [r["resumed"] for r in tried] == [0, 1] and [r["redrawn"] for r in tried] == [0, 1]
        assert _commands(tried[1]) == ["go", "right", "finish"]
    report = (result.run_dir / "report.md").read_text(encoding="utf-8")
    counted = "2 resumed where an earlier attempt peaked, 2 replies drawn again past a command"
    assert (counted in report) == (resume == "on")
    ended = {
        "on": "2 ended by the game unsolved, 2 solved (2 below a score they had reached)",
        "off": "4 ended by the game unsolved (4 below a score they had reached)",
    }[resume]
    assert f"the attempts ended: {ended}" in report  # fmt: skip
    record = read_json(result.run_dir / "history.json")[0]
    assert record["explore_ends"] == ({"terminated": 2, "solved": 2} if resume == "on" else
                                      {"terminated": 4})  # fmt: skip
    assert record["explore_fell"] == (2 if resume == "on" else 4)
    assert (record["explore_resumed"], record["explore_redrawn"]) == (
        (2, 2) if resume == "on" else (0, 0)
    )
    # a draw made again is hotter by train.explore_temperature_step
    step_up = cfg.train.explore_temperature + cfg.train.explore_temperature_step
    assert redraw_temperatures == ([pytest.approx(step_up)] * 2 if resume == "on" else [])
    events = read_jsonl(result.run_dir / "events.jsonl")
    pre = next(e for e in events if e["event"] == "preflight")
    assert pre["calls"]["target"] >= result.summary["usage"]["target"]["calls"] > 0


def test_known_losses_are_keyed_by_the_commands_before_them_and_by_the_route() -> None:
    """``known_losses``: each command after which an attempt's score fell, keyed by the
    commands before it (case, spacing and a final period aside); a loss right after the peak
    also under the attempt's recorded route there. A damaged score is no loss."""
    from skillgrad.tasks.episode import EnvRoute, EnvStep
    from skillgrad.train.revisit import known_losses

    def episode(moves: list[tuple[str, Any]], route: list[str] | None = None) -> Trajectory:
        steps = [EnvStep(step=i + 1, action=a, score=v).to_json() for i, (a, v) in enumerate(moves)]
        if route is not None:
            steps.append(EnvRoute(actions=route, score=0.5).to_json())
        return Trajectory("a", "h", (Message("user", "x"),), "", Score(0.0, False, "no"),
                          steps=tuple(steps))  # fmt: skip

    looked = episode([("Look", 0.0), ("take A", 0.25), ("look", 0.25), ("take B", 0.5),
                      ("Take  C.", 0.0)], route=["take A", "take B"])  # fmt: skip
    assert known_losses([looked]) == {
        ("look", "take a", "look", "take b"): {"take c"},
        ("take a", "take b"): {"take c"},
    }
    twice = episode([("take A", 0.25), ("take D", 0.0), ("take A", 0.25), ("take E", 0.0)])
    assert known_losses([twice]) == {("take a",): {"take d"}, ("take a", "take d", "take a"):
                                     {"take e"}}  # fmt: skip
    assert known_losses([episode([("x", "0.5"), ("y", float("nan")), ("z", 0.0)])]) == {}
    assert known_losses([episode([(5, 0.25), (None, 0.0)])]) == {("5",): {"none"}}
    assert known_losses([]) == {}


def test_the_resume_point_is_where_an_attempts_score_first_reached_the_highest_peak() -> None:
    """``resume_point``: the failed attempt whose score reached the highest peak (the latest
    of equals), cut where it first reached it, also when the game was lost after it (the score
    fell back to 0; ``up_to_peak`` cuts its steps there); nothing when no attempt made
    progress or for a reply without steps; a stored score that is no finite number (a
    malformed cache) is no peak and raises nothing."""
    from skillgrad.tasks.episode import EnvRoute, EnvStep
    from skillgrad.train.revisit import progress_commands, resume_point, up_to_peak

    def episode(scores: list[float], tag: str) -> Trajectory:
        steps = tuple(
            EnvStep(step=i + 1, action=f"{tag}{i + 1}", score=v).to_json()
            for i, v in enumerate(scores)
        )
        score = Score(scores[-1], False, "no")
        return Trajectory("a", "h", (Message("user", "x"),), tag, score, steps=steps)

    rose_twice = episode([0, 0.25, 0.25, 0.5, 0.5, 0.5], "a")
    assert progress_commands(rose_twice) == ["a1", "a2", "a3", "a4"]
    assert progress_commands(episode([0, 0, 0], "b")) == []
    plain = Trajectory("a", "h", (Message("user", "x"),), "reply", Score(0.5, False, "no"))
    assert progress_commands(plain) == []
    later = episode([0.5, 0.5], "c")
    assert resume_point([rose_twice, later]) == ["c1"]  # equal best: the latest attempt
    assert resume_point([later, episode([0.25], "d")]) == ["c1"]
    assert resume_point([episode([0, 0], "e")]) == [] and resume_point([]) == []
    lost = episode([0.25, 0.25, 0.75, 0.0], "f")  # a wrong command lost the game at step 4
    assert progress_commands(lost) == ["f1", "f2", "f3"]
    assert resume_point([rose_twice, lost, later]) == ["f1", "f2", "f3"]
    assert [s["action"] for s in up_to_peak(lost).steps] == ["f1", "f2", "f3"]
    assert up_to_peak(episode([0, 0], "e")).steps == episode([0, 0], "e").steps
    hostile = episode([0.25, "0.9", float("nan"), True, 0.5], "g")  # type: ignore[list-item]
    assert progress_commands(hostile) == ["g1", "g2", "g3", "g4", "g5"]  # a cache read as it is
    # an environment's recorded route there (replayed without detours) is what is replayed;
    # a damaged one is ignored
    route = EnvRoute(actions=["f1", "f3"], score=0.75, detours_cut=1).to_json()
    routed = dataclasses.replace(lost, steps=(*lost.steps, route))
    assert resume_point([rose_twice, routed]) == ["f1", "f3"]
    assert progress_commands(routed) == ["f1", "f2", "f3"]  # what was played stays as played
    damaged = dataclasses.replace(lost, steps=(*lost.steps, {**route, "actions": "f1 f3"}))
    assert resume_point([damaged]) == ["f1", "f2", "f3"]


def test_exploration_never_runs_on_a_val_or_test_item() -> None:
    """The exploration phase refuses a held-out trajectory outright (a bug, not data)."""
    from skillgrad.train.explore import explorable

    task = ToyTask()
    items = {s: task.load_split(s) for s in ("train", "val", "test")}

    class Ctx:  # the one field ``explorable`` reads
        def __init__(self) -> None:
            self.items = items

    def failed(item: Item) -> Trajectory:
        return Trajectory(item.id, "h", (Message("user", "Word: x"),), "x", Score(0, False, "no"))

    ctx: Any = Ctx()
    assert [i.id for i in explorable(ctx, [failed(items["train"][0])])] == ["train-0"]
    for split in ("val", "test"):
        with pytest.raises(ValueError, match="train items only"):
            explorable(ctx, [failed(items[split][0])])


def test_the_report_says_when_exploration_never_found_a_success() -> None:
    from skillgrad.runs.records import StepRecord
    from skillgrad.train.report import exploration_lines

    def step(n: int, attempts: int, found: int) -> StepRecord:
        return StepRecord(step=n, epoch=1, kind="step", explore_attempts=attempts,
                          explore_found=found)  # fmt: skip

    none = exploration_lines([step(1, 8, 0), step(2, 8, 0)])
    assert "- step 2: 0 failed train items solved in 8 attempts" in none
    assert any(line.startswith("- no attempt passed (16 in all)") for line in none)
    assert "train.explore_attempts" in none[-1] and "train.batch_size" in none[-1]
    some = exploration_lines([step(1, 8, 0), step(2, 7, 1)])
    assert not any("no attempt passed" in line for line in some)
    assert exploration_lines([step(1, 0, 0)]) == []  # nothing explored: no section
