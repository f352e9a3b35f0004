"""One row per finished run of a sweep configuration: what each seed did, not only the mean.

An interval over seeds says how much a configuration gains; the row of each seed says why a
seed gained nothing (exploration found no success at either step, or the gate refused what it
found), which steps were accepted, what the control arms and check targets scored, what the run
paid in calls and how long it ran. Every number is read from the run directory as written:
``summary.json`` (scores, controls, check targets, calls by role), ``history.json`` (per step:
the failed train items, the exploration attempts made at them and those an attempt solved;
accepted steps), ``config.json`` (the data split, ``env.options.seed``) and ``events.jsonl``
(minutes: the time between the first and the last event of each session of the run, summed, so
a run resumed in a later session does not count the time it lay stopped).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from skillgrad.runs.view import read_config, read_history, run_minutes
from skillgrad.train.context import CHECK_ROLE, ROLES


def run_row(seed: int, run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The row of one finished run (``summary``: its ``summary.json``). A damaged history is
    the ``RunDirError`` of ``read_history``; any other damaged value reads as missing (None)."""
    steps = [r for r in read_history(run_dir) if r.kind == "step"]
    explore = [
        {"step": r.step, "found": r.explore_found, "items": r.n_failures,
         "attempts": r.explore_attempts}
        for r in steps
    ]  # fmt: skip
    controls = summary.get("controls")
    placebo = controls.get("test_gain_vs_placebo") if isinstance(controls, dict) else None
    return {
        "seed": seed,
        "split": _split(run_dir),
        "explore": explore,
        "accepted": [r.step for r in steps if r.accepted],
        "val": [_number(summary.get("val_initial")), _number(summary.get("val_best"))],
        "test": [_number(summary.get("test_initial")), _number(summary.get("test_best"))],
        "vs_placebo": _number(placebo),
        "checks": _checks(summary),
        "calls": _calls(summary),
        "minutes": run_minutes(run_dir),
    }


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _split(run_dir: Path) -> int | None:
    """``env.options.seed`` of the run's resolved config (None: absent or not a whole number)."""
    env = read_config(run_dir).get("env")
    options = env.get("options") if isinstance(env, dict) else None
    seed = options.get("seed") if isinstance(options, dict) else None
    return seed if type(seed) is int else None


def _checks(summary: dict[str, Any]) -> dict[str, list[float | None]]:
    """Each check target's test score, initial and best (none without check targets)."""
    record = summary.get("check_targets")
    rows = record.get("targets") if isinstance(record, dict) else None
    out: dict[str, list[float | None]] = {}
    for row in rows if isinstance(rows, list) else ():
        if isinstance(row, dict) and isinstance(row.get("target"), str):
            out[row["target"]] = [_number(row.get("test_initial")), _number(row.get("test_best"))]
    return out


def _calls(summary: dict[str, Any]) -> dict[str, int]:
    """Model calls by role (``usage`` of summary.json, its ``all`` left out), in one order for
    every row: the run's roles (``ROLES``), then the check targets', then any other by name.
    summary.json keeps the order in which the last session first called each role, so a resumed
    run would otherwise list its check target first."""
    usage = summary.get("usage")
    out: dict[str, int] = {}
    for role, record in usage.items() if isinstance(usage, dict) else ():
        calls = record.get("calls") if isinstance(record, dict) else None
        if role != "all" and (n := _number(calls)) is not None:
            out[str(role)] = int(n)
    order = (*ROLES, CHECK_ROLE)
    rank = {role: i for i, role in enumerate(order)}
    return dict(sorted(out.items(), key=lambda kv: (rank.get(kv[0], len(order)), kv[0])))


__all__ = ["run_row"]
