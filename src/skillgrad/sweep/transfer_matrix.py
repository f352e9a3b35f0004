"""``transfer_summary.json``: the transfer matrix of a sweep. Per grid configuration and per
target: the initial and the best skill's mean score on the split, the gain (best - initial) as
mean and 95% t-interval over seeds cut to its range (``metric_stats``), the per-seed values, and
the exact sign-flip test of best vs initial per item pooled over seeds (``paired_record``).

The sweep's own target (each run's ``models.target``) is a column too, from the runs' own
summaries and result caches (the numbers of ``sweep_summary.json``): no new call.

With ``--rules-alone`` each cell also holds ``rules_alone``: the best skill with its worked
examples cut, against the same initial skill (its scores, gain and paired test); a run whose
best skill holds no example counts its best skill there.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from skillgrad.runs.io import atomic_write_json, read_json
from skillgrad.runs.layout import RunPaths
from skillgrad.sweep.summary import (
    LEVEL,
    metric_stats,
    own_item_scores,
    paired_record,
    unique_params,
)
from skillgrad.sweep.transfer import RULES, Results, RunScores, TransferPlan, TransferRun

TRANSFER_FILE = "transfer_summary.json"
MAIN_SOURCE = (
    f"the run's own scores ({RunPaths(Path()).summary.name} and its result cache): no new calls"
)
EVAL_SOURCE = "skillgrad eval of the run's skills on this target, on the run's own split"
RULES_KEYS = ("seeds", "best", "gain", "paired_test")
"""What a cell's ``rules_alone`` holds (its initial skill is the cell's)."""


def eval_scores(result: dict[str, dict[str, Any]], after: str = "best") -> RunScores:
    """The run on another target, from ``score_skill``'s results: the initial skill against
    ``after`` (the best skill, or its rules alone); an item whose rollout failed for
    infrastructure reasons on either side is no pair (counted missing)."""
    initial, other = result["initial"], result[after]
    return _paired(initial["mean_score"], initial["items"], other)


def _paired(initial: float | None, before: dict[str, Any], after: dict[str, Any]) -> RunScores:
    """``after`` (a ``score_skill`` result) against the initial skill's mean and item results;
    an item whose rollout failed for infrastructure reasons on either side is no pair."""
    diffs, missing = [], len(set(after["items"]) - set(before))
    for item_id, a in before.items():
        b = after["items"].get(item_id)
        if b is None or "infra_error" in a or "infra_error" in b:
            missing += 1
            continue
        diffs.append(float(b["score"]) - float(a["score"]))
    return RunScores(initial, after["mean_score"], diffs, missing)


def rules_scores(run: TransferRun, target: str, results: Results) -> RunScores:
    """The run's rules alone on ``target`` against its initial skill there: its best skill's
    scores when that holds no example; on the run's own target, against the initial skill's
    item scores of the run's own result cache."""
    own = target == run.main_target
    if run.rules is None:
        return run.main if own else eval_scores(results[(run.name, target)])
    scored = results[(run.name, target)]
    if not own:
        return eval_scores(scored, RULES)
    initial, _ = own_item_scores(run.root, scored[RULES]["split"])
    before = {item_id: {"score": v} for item_id, v in initial.items()}
    return _paired(run.main.initial, before, scored[RULES])


def _cell(scored: list[tuple[int, RunScores]], split: str, main: bool) -> dict[str, Any]:
    done = [(seed, s) for seed, s in scored if s.initial is not None and s.best is not None]
    initial = [s.initial for _, s in done if s.initial is not None]
    best = [s.best for _, s in done if s.best is not None]
    diffs = [d for _, s in scored for d in s.diffs]
    return {
        "main": main,
        "source": MAIN_SOURCE if main else EVAL_SOURCE,
        "seeds": [seed for seed, _ in done],
        "initial": metric_stats(initial, f"{split}_initial"),
        "best": metric_stats(best, f"{split}_best"),
        "gain": metric_stats([b - a for a, b in zip(initial, best, strict=True)], "test_gain"),
        "paired_test": paired_record(diffs, sum(s.missing for _, s in scored), split),
    }


def _columns(runs: list[TransferRun], plan: TransferPlan) -> list[str]:
    """The runs' own target(s) first, then the given targets in their order."""
    names = [r.main_target for r in runs] + [t.name for t in plan.targets]
    return list(dict.fromkeys(names))


def build_transfer_summary(plan: TransferPlan, results: Results) -> dict[str, Any]:
    """The matrix from the plan's runs and ``run_transfer``'s results (nothing is called)."""
    jobs = plan.record["jobs"]
    configs, columns = [], []
    for params in unique_params(jobs):
        runs = [r for r in plan.runs if r.params == params]
        targets: dict[str, Any] = {}
        for name in _columns(runs, plan):
            scored = [
                (r.seed, r.main if name == r.main_target else eval_scores(results[(r.name, name)]))
                for r in runs
            ]  # fmt: skip
            main = any(name == r.main_target for r in runs)
            targets[name] = _cell(scored, plan.split, main)
            if plan.rules_alone:
                rules = _cell([(r.seed, rules_scores(r, name, results)) for r in runs],
                              plan.split, main)  # fmt: skip
                targets[name]["rules_alone"] = {k: rules[k] for k in RULES_KEYS}
        columns += [c for c in targets if c not in columns]
        configs.append({
            "params": params,
            "runs": [j["name"] for j in jobs if j["params"] == params],
            "runs_finished": len(runs),
            "seeds": [r.seed for r in runs],
            "main_target": sorted({r.main_target for r in runs}),
            "targets": targets,
        })  # fmt: skip
    return _header(plan, columns) | {"configs": configs}


def _header(plan: TransferPlan, columns: list[str]) -> dict[str, Any]:
    unfinished = {name: s for name, s in plan.status.items() if s != "finished"}
    return {
        "sweep_dir": str(plan.sweep_dir),
        "split": plan.split,
        "targets": columns,
        "given_targets": [t.name for t in plan.targets],
        "runs_total": len(plan.status),
        "runs_finished": len(plan.runs),
        "complete": not unfinished,
        "not_finished": unfinished,
        "interval": f"{LEVEL:.0%} Student-t over seeds (n>=2), cut to the metric's range; "
        "n=1: the value, single_seed",
        "paired_test": "exact two-sided sign-flip test, (seed, item) pairs pooled over seeds",
        "rules_alone": plan.rules_alone,
        "updated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def write_transfer_summary(plan: TransferPlan, results: Results) -> dict[str, Any]:
    summary = build_transfer_summary(plan, results)
    atomic_write_json(plan.sweep_dir / TRANSFER_FILE, summary)
    return summary


def load_transfer_summary(sweep_dir: Path) -> dict[str, Any] | None:
    """The sweep's transfer_summary.json, or None when transfer never ran (RunDirError when it
    is not valid JSON)."""
    fix = (
        "It is computed from the transfer's answers: delete it and re-run the same `skillgrad "
        "transfer` command (what was answered is not paid again)."
    )
    data = read_json(Path(sweep_dir) / TRANSFER_FILE, what="the transfer matrix", fix=fix)
    return data if isinstance(data, dict) and isinstance(data.get("configs"), list) else None


__all__ = [
    "TRANSFER_FILE",
    "build_transfer_summary",
    "eval_scores",
    "load_transfer_summary",
    "write_transfer_summary",
]
