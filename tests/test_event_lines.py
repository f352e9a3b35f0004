"""The console's one line per step says how the step ended, names which score is the
candidate's and which the incumbent's, and on an early rejection how many selection items the
compared scores cover (they are means over those items only)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from skillgrad.callbacks import describe_event


def _record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "step": 3, "epoch": 1, "kind": "step", "lr": 2.0, "train_score": 0.25,
        "n_proposed": 4, "n_applied": 2, "incumbent_score": 0.0, "candidate_score": 0.0,
        "accepted": False, "early_rejected": False, "leak_refused": False,
        "gate_evaluated": 12, "gate_total": 12, "best_score": 0.042, "skill_tokens": 7,
        "tokens": {"optimizer": 10, "target": 5}, "cum_cost": 0.5,
    }  # fmt: skip
    record.update(changes)
    return record


@pytest.mark.parametrize(
    ("changes", "verdict"),
    [
        (
            {"accepted": True, "candidate_score": 0.5},
            "| val candidate 0.500 vs incumbent 0.000: accepted |",
        ),
        (
            {"leak_refused": True, "candidate_score": None},
            "| candidate refused (copies train/val data), not evaluated |",
        ),
        (
            {"early_rejected": True, "gate_evaluated": 9, "incumbent_score": 0.05},
            "| val candidate 0.000 vs incumbent 0.050 on 9/12 items: rejected early (cannot win) |",
        ),
        (
            {"early_rejected": True, "gate_evaluated": 0, "incumbent_score": 0.969},
            "| rejected before evaluation (incumbent 0.969: not beatable on val) |",
        ),
        ({"candidate_score": None, "n_applied": 0}, "| no candidate (no edit applied) |"),
        ({}, "| val candidate 0.000 vs incumbent 0.000: rejected |"),
        (
            {
                "candidate_score": 1.0,
                "check_targets": [{"verdict": "refused", "reason": "refused: loses 0.050 on a:b"}],
            },
            "| val candidate 1.000 vs incumbent 0.000: refused: loses 0.050 on a:b |",
        ),
        (  # a record of the version with several candidates per step: the list is not shown
            {"accepted": True, "candidate_score": 0.5, "candidates": [{"k": 2, "kept": True}]},
            "| val candidate 0.500 vs incumbent 0.000: accepted | best",
        ),
    ],
)
def test_step_line_says_how_the_step_ended(changes: dict[str, Any], verdict: str) -> None:
    described = describe_event({"event": "step_end", "record": _record(**changes)})
    assert described is not None
    level, line = described
    assert level == logging.INFO
    assert verdict in line
    assert line.startswith("step   3 ep 1 step") and "15 tok |" in line and "$0.5000" in line
