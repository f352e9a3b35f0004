"""``train.show_reference: false`` withholds the gold in every prompt the optimizer receives:
shallow and deep reflection, revise mode, ranking, the slow update, the meta skill, and an
environment episode's view (real TinyEnv processes). A fake optimizer records every prompt."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from skillgrad.config import load_config
from skillgrad.session import run_training
from skillgrad.tasks.environment import EnvironmentTask
from skillgrad.testing import (
    FunctionBackend,
    ToyTask,
    optimizer_call_kind,
    request_text,
    rules_reply,
    user_text,
)
from skillgrad.train.reflect import withhold
from skillgrad.types import ChatRequest, Item

RULE = "Answer with the word in capital letters."


@dataclass
class GoldTask(ToyTask):
    """A word in, "Gold-<word>" out: a gold no target output and no input contains."""

    name: str = "gold"
    family: ClassVar[str] = "gold"

    def make_item(self, rng: Any, split: Any, index: int) -> Item:
        item = super().make_item(rng, split, index)
        return Item(item.id, item.input, f"Gold-{item.input}")


def _optimizer(request: ChatRequest) -> Any:
    """First reflection: new rules to rank; then the rule the skill has, which sends the run to
    revise mode."""
    kind = optimizer_call_kind(request)
    if kind == "reflect" and "Keep the reply short." not in request_text(request):
        return rules_reply("Keep the reply short.", "Reply with one word only.")
    if kind == "rank":
        return {"order": list(range(len(re.findall(r"^\[\d+\]", user_text(request), re.M))))}
    if kind == "slow_update":
        return {"rules": ["Keep answering in capital letters."]}
    if kind == "meta_skill":
        return {"memo": "Capital letters did not help."}
    if kind == "revise":
        return rules_reply("Answer with the word in UPPERCASE.", replaces=RULE)
    return rules_reply(RULE)  # reflect, deep_reflect: the rule the skill already has


def _config(tmp_path: Path, show: bool, task: str = "toy", **train: Any) -> Any:
    init = tmp_path / f"init-{show}.md"
    init.write_text(f"- {RULE}\n")
    base = {"num_epochs": 2, "steps_per_epoch": 2, "batch_size": 4, "minibatch_size": 2,
            "deep_reflect_threshold": 0.5, "semantic_merge": False, "rank_with_optimizer": True,
            "learning_rate": 1, "min_learning_rate": 1, "use_slow_update": True,
            "slow_update_gate": False, "use_meta_skill": True,
            "init_skill": str(init), "show_reference": show, "examples": "on",
            "headroom_check": False}  # fmt: skip
    env = {"task": task, "output_root": str(tmp_path), "run_name": f"run-{show}"}
    return load_config(data={"env": env, "train": {**base, **train}})


def _prompts(optimizer: FunctionBackend) -> list[tuple[str | None, str]]:
    return [(optimizer_call_kind(r), request_text(r)) for r in optimizer.calls]


def test_no_optimizer_prompt_holds_a_gold_answer_with_show_reference_off(tmp_path: Path) -> None:
    task = GoldTask()
    golds = [str(i.reference) for s in ("train", "val", "test") for i in task.load_split(s)]
    seen: dict[bool, list[tuple[str | None, str]]] = {}
    for show in (True, False):
        optimizer = FunctionBackend(_optimizer)
        target = FunctionBackend(lambda r: user_text(r).removeprefix("Word: ").strip())
        run_training(_config(tmp_path, show), task=task, optimizer=optimizer, target=target)
        seen[show] = _prompts(optimizer)
    kinds = {k for k, _ in seen[False]}
    assert {"reflect", "deep_reflect", "revise", "rank", "slow_update", "meta_skill"} <= kinds
    # on: the gold is there (the test can fail); off: in no prompt, in any letter case
    assert any(g in text for _, text in seen[True] for g in golds)
    leaked = [(k, g) for k, text in seen[False] for g in golds if g.lower() in text.lower()]
    assert leaked == []
    deep = next(text for k, text in seen[False] if k == "deep_reflect")
    assert "Feedback they share: expected '(withheld)'" in deep


def test_an_episode_view_withholds_the_reference_actions(tmp_path: Path) -> None:
    seen: dict[bool, list[str]] = {}
    for show in (True, False):
        task = EnvironmentTask("skillgrad.testing:TinyEnv", n_train=4, n_val=2, n_test=2)
        optimizer = FunctionBackend(_optimizer)
        try:
            cfg = _config(tmp_path, show, num_epochs=1, steps_per_epoch=1, use_slow_update=False)
            run_training(
                cfg, task=task, optimizer=optimizer, target=FunctionBackend(lambda r: "dance")
            )
        finally:
            task.close()
        seen[show] = [text for k, text in _prompts(optimizer) if k == "reflect"]
    assert seen[True] and seen[False]
    line = "Reference actions that solve it (the target never sees them): "
    golds = {text.split(line)[1].split("\n")[0] for text in seen[True] if line in text}
    assert golds and all(" | " in g for g in golds)  # the same seeded episodes in both runs
    assert not any(g in text for text in seen[False] for g in golds)
    assert (
        "Reference actions that solve it (the target never sees them): (withheld" in seen[False][0]
    )


def test_withhold_masks_every_form_of_the_gold() -> None:
    assert withhold("expected 'GOLD-3', got 'gold-3'", ["GOLD-3"]) == (
        "expected '(withheld)', got '(withheld)'"
    )
    assert withhold("expected 'a\\nb'", ["a\nb"]) == "expected '(withheld)'"
    assert withhold("wanted open box, then take key", [["open box", "take key"]]) == (
        "wanted (withheld), then (withheld)"
    )
    assert withhold("no gold here", [None]) == "no gold here"
