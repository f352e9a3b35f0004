"""The answer-leak check in whole runs with fakes whose optimizer pastes data into the skill.

Task: echo a sentence of nine words reversed, in upper case (long inputs and long gold answers),
and ``ToyTask`` (one word in, the word in upper case out: short items). The fake target follows
the skill's rule "UPPERCASE". The fake optimizer's first edit states that rule *and* pastes a
training item (its input, its gold answer, or both for short items); once that edit shows up in
the rejected-edit buffer it proposes the rule alone.

- ``train.reject_leaks: true``: the reply with the leaking rule earns a re-ask that names the
  copy; a rule still copying after it is dropped before selection; a leaking slow-update
  candidate is refused before any target call. The skill never contains the pasted data.
- off: the leaking candidate is accepted (it helps), and the step record, ``leaks.json``, the
  summary and the report flag the copied line.
"""

from __future__ import annotations

import random
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from starlette.testclient import TestClient

from fakes_e2e import RULES_ONLY
from skillgrad.config import load_config
from skillgrad.dashboard import create_app
from skillgrad.report.html import write_html_report
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.tasks.base import Split
from skillgrad.testing import (
    FunctionBackend,
    ToyTask,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.types import ChatRequest, Item, Score

RULE = "Always answer in UPPERCASE."
_VOCAB = (
    "amber basil cedar delta ember fjord glade heron iris juniper kelp lotus "
    "marble nectar onyx pearl quartz raven sage thistle umber violet willow yarrow"
).split()


@dataclass
class ReverseTask(ToyTask):
    """A nine-word sentence in, the sentence reversed in upper case out."""

    name: str = "reverse"
    family: ClassVar[str] = "reverse"
    max_tokens: int = 64

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        words = rng.sample(_VOCAB, 9)
        return Item(f"{split}-{index}", " ".join(words), " ".join(reversed(words)).upper())

    def score(self, output: str, item: Item) -> Score:
        ok = output.strip() == item.reference
        return Score(float(ok), ok, "correct" if ok else f"expected {item.reference!r}")


def _target(request: ChatRequest) -> str:
    text = user_text(request).removeprefix("Word: ").strip()
    if "UPPERCASE" not in system_text(request):
        return text
    return " ".join(reversed(text.split())).upper() if " " in text else text.upper()


def _optimizer(
    paste: str, guidance: str = "Keep answering in upper case.", obey_reask: bool = True
) -> FunctionBackend:
    def reply(request: ChatRequest) -> Any:
        prompt = user_text(request)
        kind = optimizer_call_kind(request)
        if kind == "slow_update":  # the slow update's guidance
            return {"rules": [guidance]}
        if kind == "merge":
            return {"groups": [[i] for i in range(len(re.findall(r"^\[\d+\]", prompt, re.M)))]}
        if kind == "rank":
            return {"order": [0, 1, 2, 3]}
        if kind == "meta_skill":
            return {"memo": "Upper case helped."}
        if "quotes a task" in prompt:  # the re-ask after a rule that copies an item
            return rules_reply(RULE if obey_reask else f"{RULE} Example: {paste}")
        rejected = prompt.split("## Rules rejected before")[-1].split("## Failed tasks")[0]
        return rules_reply(RULE if paste in rejected else f"{RULE} Example: {paste}")

    return FunctionBackend(reply, "function:leaky-optimizer")


def _run(
    tmp_path: Path, task: ToyTask, paste: str, reject: bool, obey_reask: bool = True
) -> tuple[Path, Any, Any]:
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {
                "num_epochs": 1,
                "batch_size": 4,
                "steps_per_epoch": 2,
                "reject_leaks": reject,
                **RULES_ONLY,
                # the pasted item is what the line screen refuses first (one item's word or
                # answer); these runs test the leak check behind it
                "line_screens": False,
                "use_slow_update": False,
                "use_meta_skill": False,
            },
        }
    )
    optimizer = _optimizer(paste, obey_reask=obey_reask)
    target = FunctionBackend(_target, "function:upper-target")
    result = run_training(cfg, task=task, optimizer=optimizer, target=target)
    return result.run_dir, result.summary, target


def _pastes(task: ToyTask) -> dict[str, tuple[str, str]]:
    """What each leak kind pastes, and the ``source`` the check must report."""
    item = task.load_split("train")[0]
    return {
        "input": (item.input, "input"),
        "reference": (item.reference, "reference"),
        "pair": (f"{item.input} -> {item.reference}", "input+reference"),
    }


CASES = [("input", ReverseTask), ("reference", ReverseTask), ("pair", ToyTask)]


@pytest.mark.parametrize(("kind", "task_cls"), CASES)
def test_reject_leaks_re_asks_a_reflection_whose_rule_copies_an_item(
    tmp_path: Path, kind: str, task_cls: type[ToyTask]
) -> None:
    task = task_cls()
    paste, source = _pastes(task)[kind]
    run, summary, target = _run(tmp_path, task, paste, reject=True)
    reflections = read_json(run / "steps/step_0001/reflections.json")
    reasks = [r for r in reflections if r["reasked"]]
    assert reasks, reflections  # the copying reply was asked again ...
    first = read_json(run / "history.json")[0]
    # ... and the rule alone, written on the re-ask, was accepted at step 1
    assert first["accepted"] and not first["leak_refused"] and not first["leaks"]
    assert summary["leaks"]["steps"] == [] and summary["leaks"]["best_skill"] == []
    assert not any(paste in system_text(r) for r in target.calls)
    best = (run / "best_skill.md").read_text()
    assert RULE in best and paste not in best
    assert summary["val_best"] == 1.0
    # the re-ask named what was copied, from which split
    with sqlite3.connect(run / "calls.sqlite") as db:
        asked = [r for (r,) in db.execute("SELECT request FROM calls WHERE role = 'optimizer'")]
    assert any(f"copies the {source} of a train task" in r for r in asked)


def test_a_rule_still_copying_after_the_re_ask_is_dropped_before_selection(
    tmp_path: Path,
) -> None:
    task = ReverseTask()
    paste, _ = _pastes(task)["input"]
    run, summary, target = _run(tmp_path, task, paste, reject=True, obey_reask=False)
    history = read_json(run / "history.json")
    assert all(r["n_applied"] == 0 and not r["accepted"] for r in history)
    assert not any(r["leak_refused"] for r in history)  # nothing left to refuse at the gate
    warnings = [e["message"] for e in read_jsonl(run / "events.jsonl") if e["event"] == "warning"]
    dropped = [m for m in warnings if "dropped before selection" in m]
    assert dropped and "copies input of train-0" in dropped[0]
    assert not any(paste in system_text(r) for r in target.calls)
    assert paste not in (run / "best_skill.md").read_text()
    assert summary["leaks"]["best_skill"] == []


@pytest.mark.parametrize(("kind", "task_cls"), CASES)
def test_without_reject_leaks_the_accepted_leak_is_flagged(
    tmp_path: Path, kind: str, task_cls: type[ToyTask]
) -> None:
    task = task_cls()
    paste, source = _pastes(task)[kind]
    run, summary, _ = _run(tmp_path, task, paste, reject=False)
    first = read_json(run / "history.json")[0]
    assert first["accepted"] and not first["leak_refused"]
    assert [x["source"] for x in first["leaks"]] == [source]
    assert paste in (run / "best_skill.md").read_text()
    (leak,) = summary["leaks"]["best_skill"]
    assert (leak["item_id"], leak["split"], leak["source"]) == ("train-0", "train", source)
    assert leak["span"].lower() in paste.lower() or paste.lower() in leak["span"].lower()
    report = (run / "report.md").read_text()
    assert "the best skill copies train/val data on 1 line(s)" in report
    assert "flagged only (train.reject_leaks off)" in report


def test_the_initial_skill_may_hold_examples_from_the_data(tmp_path: Path) -> None:
    task = ReverseTask()
    item = task.load_split("train")[0]
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {
                "num_epochs": 1,
                "batch_size": 4,
                "steps_per_epoch": 1,
                "reject_leaks": True,
                **RULES_ONLY,
            },
        }
    )
    seed = f"Example: {item.input} -> {item.reference}\n"
    result = run_training(
        cfg,
        task=task,
        skill=seed,
        optimizer=_optimizer("(nothing pasted)"),
        target=FunctionBackend(_target, "function:upper-target"),
    )
    first = read_json(result.run_dir / "history.json")[0]
    assert first["accepted"] and first["leaks"] == []
    assert result.summary["leaks"]["best_skill"] == []
    assert seed.strip() in (result.run_dir / "best_skill.md").read_text()


@pytest.mark.parametrize("reject", [False, True])
def test_html_report_and_dashboard_show_the_flagged_lines(tmp_path: Path, reject: bool) -> None:
    task = ReverseTask()
    if reject:  # a refusal at the gate: the slow update's guidance pastes a val answer
        run, _, _, paste = _slow_update_run(tmp_path, task)
        where = "reference of val-1 (val)"
    else:
        paste, _ = _pastes(task)["input"]
        run, _, _ = _run(tmp_path, task, paste, reject=False)
        where = "input of train-0 (train)"
    html = write_html_report(run).read_text()
    client = TestClient(create_app(run.parent), base_url="http://127.0.0.1")
    page = client.get(f"/run/{run.name}").text
    points = client.get(f"/api/run/{run.name}").json()["points"]
    steps_html = html.split('id="leak-steps"')[1].split("</table>")[0]
    steps_page = page.split('id="leaks-steps"')[1].split("</table>")[0]
    for part in (steps_html, steps_page):
        assert paste in part and where in part
    if reject:
        assert 'id="no-leaks"' in html and "refused (leak)" in steps_html
        assert "The best skill copies no train/val data." in page
        assert "refused (leak)" in steps_page
        assert [p["verdict"] for p in points].count("refused (leak)") == 1
    else:
        best_html = html.split('id="leaks"')[1].split("</table>")[0]
        best_page = page.split('id="leaks-best"')[1].split("</table>")[0]
        for part in (best_html, best_page):
            assert f"<code>{paste}</code>" in part and "train-0" in part
        assert "flagged only: train.reject_leaks is off" in page
        assert points[0]["verdict"] == "accepted" and points[0]["n_leaks"] == 1


def _slow_update_run(tmp_path: Path, task: ToyTask) -> tuple[Path, list[Any], Any, str]:
    """Two epochs whose slow update's guidance pastes val item 1's answer, under reject_leaks."""
    item = task.load_split("val")[1]
    paste = f"Remember: {item.reference}"
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {
                "num_epochs": 2,
                "batch_size": 4,
                "steps_per_epoch": 1,
                "reject_leaks": True,
                "use_meta_skill": False,
                **RULES_ONLY,
                "stop_at_ceiling": False,  # the slow update of epoch 2 is the subject
            },
        }
    )
    target = FunctionBackend(_target, "function:upper-target")
    result = run_training(
        cfg, task=task, optimizer=_optimizer("(nothing)", guidance=paste), target=target
    )
    return result.run_dir, read_json(result.run_dir / "history.json"), target, item.reference


def test_the_slow_update_guidance_is_checked_too(tmp_path: Path) -> None:
    run, history, target, reference = _slow_update_run(tmp_path, ReverseTask())
    slow = history[-1]
    assert slow["kind"] == "slow_update" and slow["leak_refused"] and not slow["accepted"]
    assert [(x["item_id"], x["split"], x["source"]) for x in slow["leaks"]] == [
        ("val-1", "val", "reference")
    ]
    leaks_json = read_json(run / "slow_update/epoch_02/leaks.json")
    assert leaks_json["refused"] and leaks_json["new"] == slow["leaks"]
    assert not any(reference in system_text(r) for r in target.calls)
    assert reference not in (run / "best_skill.md").read_text()


ZWSP = "\u200b"


def _salted(text: str) -> str:
    """``text`` with a zero-width space inside every word: it reads the same, and a ``\\w+``
    reader sees two words where there is one."""
    return " ".join(w[:1] + ZWSP + w[1:] if len(w) > 1 else w for w in text.split())


def test_a_copy_salted_with_zero_width_characters_is_flagged_and_shown(tmp_path: Path) -> None:
    """Issue 24 §10: the salted copy is a leak like the plain one, and the reports show the
    span as the target receives it (the invisible characters visible)."""
    task = ReverseTask()
    paste = _salted(_pastes(task)["input"][0])
    run, summary, _ = _run(tmp_path, task, paste, reject=False)
    first = read_json(run / "history.json")[0]
    assert first["accepted"] and [x["source"] for x in first["leaks"]] == ["input"]
    (leak,) = summary["leaks"]["best_skill"]
    assert ZWSP in leak["span"] and leak["item_id"] == "train-0"
    html = write_html_report(run).read_text()
    assert 'id="no-leaks"' not in html
    assert "&lt;U+200B&gt;" in html.split('id="leaks"')[1].split("</table>")[0]
    assert "&lt;U+200B&gt;" in html.split('id="best-skill"')[1]
    page = TestClient(create_app(run.parent), base_url="http://127.0.0.1").get(f"/run/{run.name}")
    assert "&lt;U+200B&gt;" in page.text.split('id="leaks-best"')[1].split("</table>")[0]


def test_reject_leaks_refuses_a_copy_salted_with_zero_width_characters(tmp_path: Path) -> None:
    task = ReverseTask()
    paste = _salted(_pastes(task)["input"][0])
    run, summary, target = _run(tmp_path, task, paste, reject=True)
    assert any(r["reasked"] for r in read_json(run / "steps/step_0001/reflections.json"))
    assert not any(paste in system_text(r) for r in target.calls)
    assert paste not in (run / "best_skill.md").read_text()
    assert summary["leaks"]["best_skill"] == []
