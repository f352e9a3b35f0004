"""The example guard ties an example to a held-out item by its input *and* its reference, with
no boilerplate exemption for text that recurs with one answer (``screens/guard.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from skillgrad.benchmarks.quickstart import QuickstartTask
from skillgrad.config import load_config
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.testing import (
    FunctionBackend,
    ToyTask,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.train.screens.guard import ExampleGuard
from skillgrad.types import Item, Score

QUESTION = "which harbour did the old lighthouse keeper sail from on the first winter morning"
ANSWER = "he sailed from the northern harbour of amber bay before the sun rose"
TWINS = {("train", 0), ("val", 1), ("val", 2), ("val", 3)}


@dataclass
class RecurringTask(ToyTask):
    """ToyTask, except that one train item and three val items ask the same long question
    with the same long answer."""

    name: str = "recurring"
    family: ClassVar[str] = "recurring"

    def make_item(self, rng: Any, split: Any, index: int) -> Item:
        item = super().make_item(rng, split, index)
        if (split, index) in TWINS:
            return Item(item.id, QUESTION, ANSWER)
        return item

    def item_key(self, item: Item) -> str:  # the twins are distinct items
        return item.id

    def score(self, output: str, item: Item) -> Score:
        ok = output.strip() == item.reference
        return Score(float(ok), ok, "correct" if ok else "wrong")


def _example(item: Item, task: Any) -> str:
    return f"Input: {task.prompt(item)}\nReply: {item.reference}"


def test_a_question_recurring_in_three_val_items_with_its_answer_is_refused() -> None:
    task = RecurringTask()
    items = {s: task.load_split(s) for s in ("train", "val", "test")}
    guard = ExampleGuard.build(items, 8)
    why = guard.refusal(_example(items["train"][0], task))
    assert why == "holds the input and the reference of held-out item val-1 (val)"
    assert guard.refusal(_example(items["train"][1], task)) == ""


def test_a_normal_example_still_passes_on_the_quickstart_task() -> None:
    task = QuickstartTask(n_train=16, n_val=32, n_test=48, seed=0)
    items = {s: task.load_split(s) for s in ("train", "val", "test")}
    guard = ExampleGuard.build(items, 8)
    assert guard.pairs is not None
    # the labels recur with every review and the "Review:" template with both labels: no train
    # example is tied to a held-out item (the 8-word copy rule refuses what it refused before)
    assert [i.id for i in items["train"] if guard.pairs.find(_example(i, task))] == []
    # a val item's own review with its label is
    val = items["val"][0]
    assert guard.pairs.find(_example(val, task)) == (val.id, "val")


def test_examples_never_show_a_held_out_question_with_its_answer(tmp_path: Path) -> None:
    def target(request: Any) -> str:  # solves words; the long question only from a shown reply
        text = user_text(request).removeprefix("Word: ").strip()
        if text == QUESTION:
            return ANSWER if ANSWER in system_text(request) else "I do not know"
        return text.upper()

    def optimizer(request: Any) -> Any:
        assert optimizer_call_kind(request) in ("reflect", "deep_reflect")
        return rules_reply("Answer with the word in capital letters.")

    train = {"num_epochs": 1, "steps_per_epoch": 2, "batch_size": 4, "examples": "on",
             "max_examples": 2, "max_example_tokens": 120, "semantic_merge": False,
             "rank_with_optimizer": False, "use_slow_update": False, "use_meta_skill": False,
             "reject_leaks": True, "headroom_check": False}  # fmt: skip
    env = {"task": "toy", "output_root": str(tmp_path), "run_name": "r"}
    cfg = load_config(data={"env": env, "train": train})
    result = run_training(
        cfg, task=RecurringTask(), optimizer=FunctionBackend(optimizer),
        target=FunctionBackend(target),
    )  # fmt: skip
    best = (result.run_dir / "best_skill.md").read_text()
    assert QUESTION not in best and ANSWER not in best
    refusals = [
        why
        for p in sorted(result.run_dir.glob("steps/step_*/example.json"))
        for item, why in read_json(p)["refused"]
        if item == "train-0"
    ]
    assert refusals and "held-out item val-1 (val)" in refusals[0]
    assert result.summary["leaks"]["best_skill"] == []
