"""report.md: the persistent-failure list states what the run knows, nothing more."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillgrad.errors import RunDirError
from skillgrad.runs.view import load_history
from skillgrad.train.report import render_report


def _summary(run_dir: Path) -> dict[str, Any]:
    """The fixture's summary.json with the fields the loop writes and the fixture leaves out."""
    written = json.loads((run_dir / "summary.json").read_text())
    full = {
        "run_name": "demo", "status": "finished", "stop_reason": "", "task": "toy",
        "optimizer_model": "function:fake", "target_model": "function:fake", "steps": 6,
        "slow_updates": 1, "val_initial": 0.5, "val_best": 1.0, "best_step": 6,
        "test_initial": None, "test_best": None, "skill_tokens_initial": 20,
        "skill_tokens_best": 40, "edits_proposed": 14, "edits_applied": 7,
        "edits_accepted": 5, "acceptance_rate": 5 / 7, "steps_accepted": 5,
        "persistent_failures": [], "val_items": 6, "usage": {}, "warnings": [],
    }  # fmt: skip
    return full | written


def _report(run_dir: Path, failed: list[str], total: int | None) -> str:
    summary = _summary(run_dir)
    summary["persistent_failures"] = failed
    if total is None:
        summary.pop("val_items", None)  # a summary written before val_items existed
    else:
        summary["val_items"] = total
    report = render_report(summary, load_history(run_dir / "history.json"))
    return report.split("## Persistent failures")[1]


def test_every_item_failing_under_every_skill_is_said_plainly(run_dir: Path) -> None:
    text = _report(run_dir, ["val-0", "val-1", "val-2"], 3)
    assert "Every validation item (3 of 3) failed under every skill version" in text
    assert "no item was ever solved" in text
    assert "task-structure" not in text


def test_some_items_failing_are_listed_without_a_diagnosis(run_dir: Path) -> None:
    text = _report(run_dir, ["val-2"], 6)
    assert "1 of 6 validation items failed under every skill version evaluated: val-2" in text
    assert "task-structure" not in text and "Every validation item" not in text
    assert "1 validation items failed" in _report(run_dir, ["val-2"], None)
    assert "None." in _report(run_dir, [], 6)


def test_report_rows_come_from_typed_records(run_dir: Path) -> None:
    report = render_report(_summary(run_dir), load_history(run_dir / "history.json"))
    assert "| 2 | 1 | step | 2.00 | 2 | 1 | early-rejected | 0.500 |" in report


def test_a_damaged_history_entry_is_a_located_error(run_dir: Path) -> None:
    path = run_dir / "history.json"
    rows = json.loads(path.read_text())
    rows[3]["accepted"] = "maybe"
    path.write_text(json.dumps(rows))
    with pytest.raises(RunDirError, match=r"history.json: entry 3: step record field 'accepted'"):
        load_history(path)


def test_transfer_rows_show_their_missing_count_and_old_rows_leave_it_blank(
    run_dir: Path,
) -> None:
    new = {"skill": "/r/best_skill.md", "setup": "toy / other", "split": "test", "n": 6,
           "missing": 2, "mean_score": 1.0, "pass_rate": 1.0}  # fmt: skip
    old = {k: v for k, v in new.items() if k != "missing"} | {"skill": "old.md"}
    report = render_report(_summary(run_dir), load_history(run_dir / "history.json"), [new, old])
    table = report.split("## Transfer evaluations")[1]
    assert "| skill | setup | split | items | missing | mean score | pass rate |" in table
    assert "| best_skill.md | toy / other | test | 6 | 2 | 1.000 | 1.000 |" in table
    assert "| old.md | toy / other | test | 6 |  | 1.000 | 1.000 |" in table


def test_a_p_value_too_small_for_four_decimals_is_a_bound_not_zero() -> None:
    from skillgrad.report.sweep import paired_text
    from skillgrad.report.text import p_text

    assert p_text(2 / 2**24) == "p < 0.0001" and p_text(0.0078125) == "p = 0.0078"
    assert p_text(1.0) == "p = 1" and p_text(None) == "–"
    test = {"mean_diff": 0.75, "n_pairs": 30, "wins": 24, "losses": 0, "ties": 6,
            "p_value": 2 / 2**24, "method": "exact"}  # fmt: skip
    assert "(+24 / -0 / =6), p < 0.0001 (exact sign-flip)" in paired_text(test)
