"""Arms of a grid sweep compared with each other: an ablation's "on minus off", with its interval.

A grid sweep's summary gives each configuration its own mean and interval over seeds. Whether
one configuration is better than another is a different question, and the two intervals
overlapping does not answer it: the seeds share their splits (``--vary-split`` sets the data
seed from the seed, not from the configuration), so the same seed's runs of two configurations
meet the same train, val and test items. This module pairs them: per seed, the arm's best-skill
test score minus the reference's (a Student-t interval over seeds), and per test item, the
arm's best skill minus the reference's best skill (the exact sign-flip test, pairs pooled over
seeds). The reference is the grid's first configuration (every axis at its first value), so
``--grid train.explore=off,on`` reads as "on minus off", and with ``--ablate`` (the first
configuration is the base config) each row reads "this change minus the base".

Only seeds both configurations finished count; an item scored under only one of the two best
skills (an errored rollout, or a grid axis that changes the data) is counted as missing, never
paired with another item.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skillgrad.runs.view import read_splits, read_summary
from skillgrad.stats import sign_flip_test
from skillgrad.sweep.worker import COMPLETE

SPLIT = "test"
ItemScores = Callable[[Path], dict[str, float]]
"""A run's per-item test scores of its best skill (``summary.best_item_scores``)."""
Stats = Callable[[Sequence[float], str], dict[str, Any]]
"""Mean and interval of per-seed values (``summary.metric_stats``)."""


def finished_by_seed(sweep_dir: Path, jobs: list[dict[str, Any]]) -> dict[int, tuple[Path, float]]:
    """Per seed whose run of these ``jobs`` (one configuration) finished: its run directory and
    its best skill's test score."""
    out: dict[int, tuple[Path, float]] = {}
    for job in jobs:
        run_dir = sweep_dir / job["name"]
        summary = read_summary(run_dir)
        if not isinstance(summary, dict) or summary.get("status") not in COMPLETE:
            continue
        if (score := _score(summary)) is not None:
            out[int(job["seed"])] = (run_dir, score)
    return out


def _score(summary: dict[str, Any]) -> float | None:
    value = summary.get("test_best")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def compare_arm(
    reference: dict[int, tuple[Path, float]],
    arm: dict[int, tuple[Path, float]],
    best_scores: ItemScores,
) -> dict[str, Any]:
    """The arm against the reference over the seeds both finished: per seed, the difference of
    the best skills' test scores; per test item, of their item scores."""
    seeds = sorted(set(reference) & set(arm))
    per_seed: list[float] = []
    diffs: list[float] = []
    missing = 0
    for seed in seeds:
        (ref_dir, ref_score), (arm_dir, arm_score) = reference[seed], arm[seed]
        per_seed.append(arm_score - ref_score)
        ref_items, arm_items = best_scores(ref_dir), best_scores(arm_dir)
        items = dict.fromkeys([*read_splits(ref_dir).get(SPLIT, []),
                               *read_splits(arm_dir).get(SPLIT, [])])  # fmt: skip
        for item in items:
            if item in ref_items and item in arm_items:
                diffs.append(arm_items[item] - ref_items[item])
            else:
                missing += 1
    return {"seeds": seeds, "per_seed": per_seed, "item_diffs": diffs, "missing_pairs": missing}


def arm_records(
    sweep_dir: Path,
    jobs: list[dict[str, Any]],
    configs: list[dict[str, Any]],
    best_scores: ItemScores,
    stats: Stats,
) -> list[dict[str, Any]]:
    """One record per configuration after the first: it against the first, paired by seed and
    by test item (none for a sweep of one configuration)."""
    if len(configs) < 2:
        return []
    by_params = [[j for j in jobs if j["params"] == c] for c in configs]
    reference = finished_by_seed(sweep_dir, by_params[0])
    out = []
    for params, arm_jobs in zip(configs[1:], by_params[1:], strict=True):
        found = compare_arm(reference, finished_by_seed(sweep_dir, arm_jobs), best_scores)
        test = sign_flip_test(found["item_diffs"]).to_json()
        out.append({
            "params": params,
            "reference": configs[0],
            "seeds": found["seeds"],
            "test_best_diff": stats(found["per_seed"], "test_best_diff"),
            "paired_test": {
                "comparison": f"{SPLIT}: this arm's best skill vs the reference's, per item, "
                "pooled over seeds",
                **test,
                "missing_pairs": found["missing_pairs"],
            },
        })  # fmt: skip
    return out


__all__ = ["arm_records", "compare_arm", "finished_by_seed"]
