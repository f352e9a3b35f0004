"""Every line earns its place: near duplicates by meaning, item-specific lines and lines
addressed to the grader are kept out of the skill."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from skillgrad.config import load_config
from skillgrad.runs.io import read_jsonl
from skillgrad.session import run_training
from skillgrad.tasks.base import Split
from skillgrad.tasks.episode import Vocabulary
from skillgrad.testing import (
    FunctionBackend,
    ToyTask,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.train.screens.dedup import near_duplicate, screen, skill_lines
from skillgrad.train.screens.specific import (
    FAILED_REPLY,
    ITEM_SPECIFIC,
    ONE_ATTEMPT,
    PLACEHOLDER,
    TO_GRADER,
    EpisodeObjects,
    FailedReplies,
    ItemWords,
    addressed_to_grader,
    attempt_step,
    item_specific,
    known_rules,
    placeholder_form,
    screen_lines,
)
from skillgrad.types import ChatRequest, Edit, Item, Message, Score, Trajectory

SHORT = "Read the instruction carefully."
LONG = "Read the instruction carefully before answering."


def _add(text: str) -> Edit:
    return Edit(op="add", section="", content=f"- {text}")


def test_a_rule_padded_with_generic_words_is_a_duplicate_either_way() -> None:
    assert near_duplicate(LONG, [f"- {SHORT}"], 0.85) == f"- {SHORT}"
    assert near_duplicate(SHORT, [f"- {LONG}"], 0.85) == f"- {LONG}"
    out = screen([_add(LONG)], f"# Rules\n\n- {SHORT}\n", step=1, threshold=0.85)
    assert not out.kept and "already in the skill" in out.dropped[0]["reason"]
    kept_first = screen([_add(SHORT), _add(LONG)], "", step=1, threshold=0.85)
    assert [e.content for e in kept_first.kept] == [f"- {SHORT}"]


def test_a_rule_adding_a_real_instruction_is_a_different_rule() -> None:
    for other in (
        "Read the instruction carefully and count every letter.",
        "Read the instruction carefully, then list its constraints.",
        "Read the instruction twice.",
        "Answer with the word in uppercase.",
    ):
        assert near_duplicate(other, [f"- {SHORT}"], 0.85) is None, other


# -- item-specific lines and lines addressed to the grader ---------------------------------

FACTS = [
    ("Silplen", "Veltorta"),
    ("Quarvon", "Ismelle"),
    ("Drennick", "Paluvar"),
    ("Ostrava Minor", "Hethwing"),
]


def _passage(split: str, i: int, land: str, animal: str) -> Item:
    text = f"Passage: The national animal of {land} is the {animal}. Question: what is it?"
    return Item(f"{split}-{i}", text, animal.lower())


def _reading_items() -> dict[str, list[Item]]:
    item = _passage
    train = [item("train", i, *f) for i, f in enumerate(FACTS)]
    val = [item("val", 0, "Brelmark", "Osprune"), item("val", 1, "Tavisco", "Rendle")]
    return {"train": train, "val": val}


def _counting_items() -> dict[str, list[Item]]:
    words = ["strawberry", "banana", "mississippi", "letter", "bookkeeper", "cat", "apple"]
    letters = ["r", "a", "s", "t", "e", "c", "p"]
    train = [
        Item(f"train-{i}", f"How many times is the letter '{c}' in '{w}'?", str(w.count(c)))
        for i, (w, c) in enumerate(zip(words, letters, strict=True))
    ]
    return {"train": train, "val": []}


def test_a_rule_naming_what_one_train_item_holds_is_item_specific() -> None:
    index = ItemWords.build(_reading_items())
    fact = "The national animal of Silplen is the Veltorta."
    why = item_specific(fact, index, frozenset())
    assert why is not None and "train-0" in why and "silplen" in why
    # the words every item shares (the passage template) name no item
    assert item_specific("Read the Passage, then answer the Question.", index, frozenset()) is None
    # a word the skill already holds is the user's, not one item's
    assert item_specific(fact, index, frozenset({"silplen", "veltorta"})) is None
    counting = ItemWords.build(_counting_items())
    letter = "Ask for the number of times the letter 'r' appears in the text."
    assert "'r'" in (item_specific(letter, counting, frozenset()) or "")
    assert item_specific("Count each letter of the word one by one.", counting, frozenset()) is None
    # a capital after ':' starts a clause, it is not a name (measured on BFCL's items: one
    # holds Python's None)
    calls = ItemWords.build({"train": [Item("t0", "f(x=None)", "f"), Item("t1", "g(y=2)", "g")]})
    reply = "If no function applies, reply: None of the given functions can answer this question."
    assert item_specific(reply, calls, frozenset()) is None


def test_a_reply_form_holding_one_items_answer_is_shown_with_a_placeholder() -> None:
    counting = ItemWords.build(_counting_items())
    line = "- Read the instruction carefully before answering. Reply in exactly this form: 1"
    assert placeholder_form(line, counting) == line[:-1] + PLACEHOLDER
    assert placeholder_form("- Reply with the count as a number.", counting) is None
    reviews = [Item(f"t{i}", f"review {i}", ("positive", "negative")[i % 2]) for i in range(8)]
    labels = ItemWords.build({"train": reviews})
    # a label shared by many items is the task's vocabulary: any rule may name it
    assert placeholder_form("- Reply in exactly this form: negative", labels) is None
    out = screen_lines([_add(line[2:])], counting, "")
    assert [e.content for e in out.kept] == [line[:-1] + PLACEHOLDER]
    assert "placeholder" in out.kept[0].rationale or PLACEHOLDER in out.kept[0].rationale
    refused = screen_lines([_add(line[2:])], counting, "", rewrite=False)
    assert not refused.kept and refused.dropped[0]["reason"].startswith(ITEM_SPECIFIC)


GRADER_LINES = (
    "Provide the input and expected answer in the feedback.",
    "Tell the grader which rule you followed.",
    "Make sure the evaluator can see your reasoning.",
    "Write the reference answer into your feedback.",
)


def _shipped_skill_lines() -> list[tuple[Path, str]]:
    root = Path(__file__).resolve().parents[2]
    paths = [*(root / "docs/hand-written-skills").glob("*.md"),
             *(root / "examples").rglob("*.md"),
             *(root / "tests/fixtures").rglob("*skill*.md")]  # fmt: skip
    assert len(paths) >= 15
    return [(p, line) for p in paths for line in skill_lines(p.read_text())]


def test_a_line_addressed_to_the_grader_is_refused_and_no_shipped_skill_line_is() -> None:
    for line in GRADER_LINES:
        assert addressed_to_grader(line) is not None, line
    for line in ("Read the game's feedback after every command.",
                 "Compare your count with the question before you answer.",
                 "Answer with the expected format: one word."):  # fmt: skip
        assert addressed_to_grader(line) is None, line
    hits = [(p.name, x) for p, x in _shipped_skill_lines() if addressed_to_grader(x)]
    assert hits == []
    index = ItemWords.build(_reading_items())
    out = screen_lines([_add(x) for x in GRADER_LINES], index, "")
    assert not out.kept and all(d["reason"].startswith(TO_GRADER) for d in out.dropped)


def test_a_line_naming_a_step_of_one_shown_attempt_is_refused() -> None:
    # measured on Pecking Order with gold off: an accepted skill held this line; the episode
    # view numbers one attempt's steps ("Where it went wrong: step 3")
    banana = "If the target fails to take the banana in step 3, they should take it in step 3."
    assert attempt_step(banana, "") == "in step 3"
    assert attempt_step("Read the map at turn #2 before you move.", "") == "at turn #2"
    for line in ("Step 3: put the coin in the box.",
                 "Take the coin in 3 steps or fewer.",
                 "Read the instructions book before every step.",
                 "Follow the steps in order, one command per step."):  # fmt: skip
        assert attempt_step(line, "") is None, line
    # the skill's own numbered procedure: naming its step is a reference, not one attempt's
    assert attempt_step(banana, "1. Read the book.\nStep 3: take the fruit.") is None
    hits = [(p.name, x) for p, x in _shipped_skill_lines() if attempt_step(x, "")]
    assert hits == []
    out = screen_lines([_add(banana), _add(GENERAL)], ItemWords.build(_reading_items()), "")
    assert [e.content for e in out.kept] == [f"- {GENERAL}"]
    assert out.dropped[0]["reason"].startswith(f"{ONE_ATTEMPT}: 'in step 3'")


def _start(text: str, *acted: str) -> Vocabulary:
    seen = frozenset(text.lower().replace(".", "").split())
    return Vocabulary(seen, tuple(f"take {w}" for w in acted), frozenset(acted))


def test_a_line_naming_an_object_some_shown_episodes_hold_is_refused() -> None:
    # Pecking Order's shape: every episode starts with the book, each with other fruit
    book = "Your task is to read and follow the instructions book."
    objects = EpisodeObjects.build([
        _start(f"{book} You see an apple and a banana.", "instructions", "book", "apple"),
        _start(f"{book} You see a papaya.", "instructions", "book", "papaya"),
        None,  # a trajectory of a kind without commands adds nothing
    ])  # fmt: skip
    assert objects.words == {"apple", "papaya"}  # banana: never acted on
    assert objects.named("Take the apple next.", frozenset()) == "apple"
    for line in ("Read the instructions book first.",
                 "Take the object you are instructed to take next.",
                 "Take the banana only when the book names it."):  # fmt: skip
        assert objects.named(line, frozenset()) is None, line
    assert objects.named("Take the apple next.", frozenset({"apple"})) is None  # the skill's
    # a worked example shows one episode's objects: its words are not the skill's own
    skill = "- Read the book.\n\n# Examples\nAction: take apple\nObservation: You take the apple.\n"
    assert "apple" not in known_rules(skill, "") and "Read the book." in known_rules(skill, "")
    # one episode shown: nothing to compare, nothing refused
    assert EpisodeObjects.build([_start(book, "apple")]).words == frozenset()
    index = ItemWords.build({"train": [Item("train-1", {"seed": 1}), Item("train-2", {"seed": 2})]})
    out = screen_lines([_add("Take the apple next."), _add(GENERAL)], index, "", objects=objects)
    assert [e.content for e in out.kept] == [f"- {GENERAL}"]
    assert out.dropped[0]["reason"].startswith(f"{ONE_ATTEMPT}: names 'apple'")


def _played(replies: list[str], passed: bool) -> Trajectory:
    messages = [Message("user", "Your task is to read and follow the instructions book.")]
    for reply in replies:
        messages += [Message("assistant", reply), Message("user", "Unknown action.")]
    return Trajectory(item_id="train-1", skill_hash="s", messages=tuple(messages), output="",
                      score=Score(float(passed), passed=passed))  # fmt: skip


def test_a_line_repeating_a_failed_reply_is_refused() -> None:
    # measured (Pecking Order, split 500): a rule quoting the target's failed reply made the
    # 0.5B type that reply; a line naming the mistake is kept
    apology = "I apologize for the confusion. Please provide more details or clarify"
    failed = _played(["Open the instructions book", apology, apology], passed=False)
    solved = _played(["read instructions book", "take apple"], passed=True)
    accepted = Vocabulary(frozenset(), ("read instructions book", "take apple"), frozenset())
    replies = FailedReplies.build([failed, solved], [None, accepted])
    quoting = f"Do not repeat the same action '{apology}' 11 times in a row."
    assert replies.repeated(quoting, "") == "i apologize for the confusion please"
    for line in (
        "Do not apologize; type one command the game accepts.",
        "Read the instructions book to understand the game.",  # a short failed reply: the
        "Never type 'Open the instructions book'.",  # procedure in words may share it
        "Read the instructions book first.",  # the task's own words
        "Type `read instructions book`, then take what it names.",  # an accepted command
        "Follow the instructions book found in the environment.",  # the task text gives them
    ):
        assert replies.repeated(line, "") is None, line
    # a run the skill already states is not the failure's; a passing attempt's words pass
    assert replies.repeated(quoting, f"- {quoting}") is None
    assert FailedReplies.build([solved], [accepted]).runs == frozenset()
    index = ItemWords.build({"train": [Item("train-1", {"seed": 1})]})
    out = screen_lines([_add(quoting), _add(GENERAL)], index, "", failed=replies)
    assert [e.content for e in out.kept] == [f"- {GENERAL}"]
    assert out.dropped[0]["reason"].startswith(f"{FAILED_REPLY}: 'i apologize for the")


@dataclass
class ReadingTask(ToyTask):
    """A passage about a land's national animal; the answer is the animal."""

    name: str = "reading"
    family: ClassVar[str] = "reading"

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        items = {**_reading_items(), "test": [_passage("test", 0, "Ulvar", "Mossket"),
                                              _passage("test", 1, "Kettrin", "Sarbe")]}  # fmt: skip
        return replace(items[split][index], id=f"{split}-{index}")


GENERAL = "Answer with the animal's name in lower case."


def _reading_optimizer(request: ChatRequest) -> Any:
    kind = optimizer_call_kind(request)
    if kind == "merge":
        n = len(re.findall(r"^\[\d+\]", user_text(request), re.M))
        return {"groups": [[i] for i in range(n)]}
    if kind == "rank":
        return {"order": [0, 1, 2, 3]}
    return rules_reply("The national animal of Silplen is the Veltorta.", GRADER_LINES[0],
                       GENERAL)  # fmt: skip


def _reading_target(request: ChatRequest) -> str:
    animal = user_text(request).split(" is the ")[1].split(".")[0]
    return animal.lower() if "lower case" in system_text(request) else animal


def test_a_fit_never_learns_an_items_fact_or_a_line_to_the_grader(tmp_path: Path) -> None:
    task = ReadingTask(n_train=4, n_val=2, n_test=2)
    cfg = load_config(
        data={
            "env": {"task": "reading", "output_root": str(tmp_path), "run_name": "run"},
            # about the line screens, not the gate: strict accepts on 2 val items
            "train": {"num_epochs": 1, "batch_size": 4, "steps_per_epoch": 1,
                      "learning_rate": 3, "use_slow_update": False, "use_meta_skill": False,
                      "gate_rule": "strict"},
        }
    )  # fmt: skip
    result = run_training(cfg, task=task, optimizer=FunctionBackend(_reading_optimizer),
                          target=FunctionBackend(_reading_target))  # fmt: skip
    best = (result.run_dir / "best_skill.md").read_text()
    assert GENERAL in best and "Silplen" not in best and "feedback" not in best
    events = read_jsonl(result.run_dir / "events.jsonl")
    warned = " ".join(e["message"] for e in events if e["event"] == "warning")
    assert "item-specific: names 'silplen'" in warned and TO_GRADER in warned
