"""What exploration found in each grid configuration of a sweep (``train.explore``).

A learning curve does not say why a seed learned nothing. On Pecking Order with gold off, the
seeds that stayed at zero were the splits where no exploration attempt solved a train episode
(docs/results.md): the lower end of the interval was set by exploration, not by what the loop did
with a success. So each configuration's summary counts, over its finished runs, the exploration
attempts, the failed train items they were made at and those an attempt solved, which runs
found no success at all, and how many best skills hold a self-found worked example (what the
gate kept of it). Read from each run's ``history.json`` (``explore_*`` of its step records) and
``summary.json`` (``examples``), so sweeps run before this existed are counted too; the report
prints it as one line (``report/sweep.exploration_text``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillgrad.runs.view import read_history
from skillgrad.train.examples import SELF_FOUND


def _holds_self_found(summary: dict[str, Any]) -> bool:
    examples = summary.get("examples")
    rows = examples.get("best_skill") if isinstance(examples, dict) else None
    if not isinstance(rows, list):
        return False
    return any(isinstance(r, dict) and r.get("origin") == SELF_FOUND for r in rows)


def run_exploration(seed: int, run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """One finished run: its exploration attempts, the failed train items they were made at
    (summed over steps: an item failing at two steps counts twice), those an attempt solved,
    whether its best skill holds a self-found example, and how its attempts ended (``ends``:
    counts by ``tasks.episode.ENDS``; none for a run written before they were recorded). A
    damaged history is a ``RunDirError`` naming the file."""
    steps = [r for r in read_history(run_dir) if r.kind == "step"]
    explored = [r for r in steps if r.explore_attempts > 0]
    ends: Counter[str] = Counter()
    for r in explored:
        ends.update(r.explore_ends)
    return {
        "seed": seed,
        "attempts": sum(r.explore_attempts for r in explored),
        "items": sum(r.n_failures for r in explored),
        "found": sum(r.explore_found for r in explored),
        "self_found_in_best": _holds_self_found(summary),
        "ends": dict(ends.most_common()),
    }


def exploration_record(runs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The configuration's totals over its runs (``run_exploration`` rows); None when no run
    made an attempt (exploration off, or no train item failed)."""
    if not any(r["attempts"] for r in runs):
        return None
    return {
        "attempts": sum(r["attempts"] for r in runs),
        "items": sum(r["items"] for r in runs),
        "found": sum(r["found"] for r in runs),
        "runs": len(runs),
        "seeds_without_a_find": [r["seed"] for r in runs if not r["found"]],
        "best_skills_with_self_found": sum(bool(r["self_found_in_best"]) for r in runs),
        "ends": dict(sum((Counter(r.get("ends", {})) for r in runs), Counter()).most_common()),
        "per_seed": list(runs),
    }


__all__ = ["exploration_record", "run_exploration"]
