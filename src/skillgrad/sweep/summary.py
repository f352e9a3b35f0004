"""``sweep_summary.json``: per grid configuration, mean and 95% interval of each metric over
seeds, the per-seed values, and a paired test of the best vs the initial skill on the test split
pooled over seeds; with check targets, the same intervals of each one's test scores; with a
grid or ``--ablate``, each configuration after the first against the first, paired by seed and
by test item (``arms``: ``sweep/arms.py``); what exploration found (``sweep/exploration.py``)
and one row per finished run (``per_run``: ``sweep/run_rows.py``).

Only finished runs count; ``runs_finished`` / ``runs_total`` say how many that is. The per-item
test scores of the initial and the best skill come from each run's result cache (calls.sqlite,
``results``: one scored trajectory per skill and item), the same rows the run's test scores were
averaged from; an item scored for only one of the two skills (an errored rollout) is left out
of the pairs and counted in ``missing_pairs``. The two skills' texts are the run's committed
state (``runtime_state.json``), so skill packages count with their whole bundle.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.runs.cache import CallCache
from skillgrad.runs.io import atomic_write_json, read_json
from skillgrad.runs.layout import RunPaths
from skillgrad.runs.provenance import CodeProvenance, code_provenance, read_code
from skillgrad.runs.view import committed_skills, read_splits, read_summary
from skillgrad.skill.document import skill_hash
from skillgrad.stats import sign_flip_test, t_interval
from skillgrad.sweep.arms import arm_records
from skillgrad.sweep.attribution import repeated_edits
from skillgrad.sweep.exploration import exploration_record, run_exploration
from skillgrad.sweep.plan import SUMMARY_FILE, load_plan_record
from skillgrad.sweep.run_rows import run_row
from skillgrad.sweep.worker import COMPLETE

METRICS = (
    "val_initial", "val_best", "test_initial", "test_best", "test_gain",
    "test_gain_vs_empty", "test_gain_vs_placebo", "skill_tokens", "calls", "cost_usd",
)  # fmt: skip
"""``test_gain_vs_empty`` / ``_vs_placebo``: the best skill minus each control arm on the same
test items (``train/trust/controls.py``; runs with ``train.controls``, else no values)."""
LEVEL = 0.95
CHECK_METRICS = ("test_initial", "test_best", "test_change")
"""Per check target (``train.check_targets``): the initial and the best skill on the test split
on that target, and the change (does training for the main target hurt the others?)."""


def run_metrics(summary: dict[str, Any]) -> dict[str, float | None]:
    """The sweep metrics of one run's summary.json (None when the run did not report one)."""
    usage = (summary.get("usage") or {}).get("all") or {}
    ti, tb = summary.get("test_initial"), summary.get("test_best")
    found = summary.get("controls")
    controls: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "val_initial": summary.get("val_initial"),
        "val_best": summary.get("val_best"),
        "test_initial": ti,
        "test_best": tb,
        "test_gain": tb - ti if ti is not None and tb is not None else None,
        "test_gain_vs_empty": controls.get("test_gain_vs_empty"),
        "test_gain_vs_placebo": controls.get("test_gain_vs_placebo"),
        "skill_tokens": summary.get("skill_tokens_best"),
        "calls": usage.get("calls"),
        "cost_usd": usage.get("cost"),
    }


def own_item_scores(
    run_dir: Path, split: str = "test"
) -> tuple[dict[str, float], dict[str, float]]:
    """Per item of ``split``: the initial and the best skill's score on the run's own target
    (its result cache; sample 0 of each item); an item its cache lacks is absent."""
    initial, best = committed_skills(run_dir)  # the full texts (a package: its bundle)
    store = CallCache(RunPaths(run_dir).calls_db)
    try:
        scores: tuple[dict[str, float], dict[str, float]] = ({}, {})
        for item_id in read_splits(run_dir).get(split, []):
            for text, out in zip((initial, best), scores, strict=True):
                result = store.get_result(skill_hash(text), item_id)
                if result is not None:
                    out[item_id] = result.score.value
    finally:
        store.close()
    return scores


def best_item_scores(run_dir: Path, split: str = "test") -> dict[str, float]:
    """Per item of ``split``: the best skill's score on the run's own target."""
    return own_item_scores(run_dir, split)[1]


def paired_diffs(
    before: dict[str, float], after: dict[str, float], items: Sequence[str]
) -> tuple[list[float], int]:
    """Per item of ``items``: ``after`` minus ``before``; and the items missing either."""
    pairs = [(before.get(i), after.get(i)) for i in items]
    diffs = [b - a for a, b in pairs if a is not None and b is not None]
    return diffs, len(pairs) - len(diffs)


def test_paired_diffs(run_dir: Path, split: str = "test") -> tuple[list[float], int]:
    """Per item of ``split``: best-skill score minus initial-skill score on the run's own target
    (its result cache; sample 0 of each item); and the items missing one."""
    initial, best = own_item_scores(run_dir, split)
    return paired_diffs(initial, best, read_splits(run_dir).get(split, []))


# The range each metric can take: a t-interval reaching past it (a score above 1 with scores
# near 1 and few seeds) is cut at the bound, which the metric cannot cross.
BOUNDS: dict[str, tuple[float, float]] = {
    **{m: (0.0, 1.0) for m in ("val_initial", "val_best", "test_initial", "test_best")},
    **{m: (-1.0, 1.0) for m in ("test_gain", "test_gain_vs_empty", "test_gain_vs_placebo")},
    "test_change": (-1.0, 1.0),
    "test_best_diff": (-1.0, 1.0),
    "skill_tokens": (0.0, math.inf),
    "calls": (0.0, math.inf),
    "cost_usd": (0.0, math.inf),
}


def metric_stats(values: Sequence[float], metric: str = "") -> dict[str, Any]:
    """Mean and 95% t-interval over seeds, the interval cut to the metric's range."""
    iv = t_interval(values, LEVEL)
    low, high = BOUNDS.get(metric, (-math.inf, math.inf))
    out: dict[str, Any] = {
        "mean": iv.mean,
        "ci_low": None if iv.ci_low is None else max(low, iv.ci_low),
        "ci_high": None if iv.ci_high is None else min(high, iv.ci_high),
        "n": iv.n,
        "values": list(values),
    }
    if iv.single:
        out["single_seed"] = True  # one value: no spread to estimate, the interval is the value
    return out


def build_sweep_summary(sweep_dir: Path) -> dict[str, Any]:
    """Read every run of the sweep and compute the summary (does not write it)."""
    record = load_plan_record(sweep_dir)
    if record is None:
        raise RunDirError(f"{sweep_dir} is not a sweep directory (no sweep.json)")
    jobs = record["jobs"]
    configs: list[dict[str, Any]] = []
    params_list = unique_params(jobs)
    for params in params_list:
        runs = [j for j in jobs if j["params"] == params]
        configs.append(_config_summary(Path(sweep_dir), params, runs))
    arms = arm_records(Path(sweep_dir), jobs, params_list, best_item_scores, metric_stats)
    finished = sum(c["runs_finished"] for c in configs)
    return {
        "sweep_dir": str(sweep_dir),
        "config_path": record.get("config_path"),
        "seeds": record.get("seeds"),
        "grid": record.get("grid"),
        "ablate": record.get("ablate", []),
        "vary_split": record.get("vary_split"),
        "runs_total": len(jobs),
        "runs_finished": finished,
        "complete": finished == len(jobs),
        "interval": f"{LEVEL:.0%} Student-t over seeds (n>=2), cut to the metric's range; "
        "n=1: the value, single_seed",
        "paired_test": "exact two-sided sign-flip test, (seed, item) pairs pooled over seeds",
        "updated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "configs": configs,
        "arms": arms,
    }


def unique_params(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The grid configurations of ``sweep.json``'s jobs, in plan order."""
    out: list[dict[str, Any]] = []
    for job in jobs:
        if job["params"] not in out:
            out.append(job["params"])
    return out


def _config_summary(sweep_dir: Path, params: dict[str, Any], runs: list[dict[str, Any]]) -> dict:
    values: dict[str, list[float]] = {m: [] for m in METRICS}
    checks: dict[str, dict[str, list[float]]] = {}  # per check target: its test metrics
    seeds, statuses, diffs, missing = [], {}, [], 0
    made_worse: list[dict[str, Any]] = []
    finished_runs: list[tuple[int, Path]] = []  # for the edits accepted in several seeds
    runs_code: list[dict[str, Any] | None] = []  # None: a run that did not record its code
    explored: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []  # one per finished run (sweep/run_rows.py)
    for job in runs:
        run_dir = sweep_dir / job["name"]
        summary = read_summary(run_dir)
        statuses[job["name"]] = status = run_status(run_dir, summary)
        if summary is None or status not in COMPLETE:  # a complete run has a summary
            continue
        seeds.append(job["seed"])
        finished_runs.append((job["seed"], run_dir))
        explored.append(run_exploration(job["seed"], run_dir, summary))
        rows.append(run_row(job["seed"], run_dir, summary))
        if (code := read_code(summary.get("code"))) not in runs_code:
            runs_code.append(code)
        for key, value in run_metrics(summary).items():
            if value is not None and math.isfinite(float(value)):
                values[key].append(float(value))
        for row in check_rows(summary):
            for key in CHECK_METRICS:
                checks.setdefault(row["target"], {m: [] for m in CHECK_METRICS})[key].append(
                    float(row[key])
                )
        made_worse += worse_items(job["seed"], summary)
        run_diffs, run_missing = test_paired_diffs(run_dir)
        diffs += run_diffs
        missing += run_missing
    return {
        "params": params,
        "runs": [j["name"] for j in runs],
        "status": statuses,
        "runs_finished": len(seeds),
        "seeds": seeds,
        "runs_code": runs_code,
        **{m: metric_stats(values[m], m) for m in METRICS},
        "paired_test": paired_record(diffs, missing, "test"),
        "repeated_edits": repeated_edits(finished_runs),
        "made_worse": made_worse,
        "exploration": exploration_record(explored),
        "per_run": rows,
        "check_targets": {
            target: {m: metric_stats(v, m) for m, v in stats.items()}
            for target, stats in checks.items()
        },
    }


def worse_items(seed: int, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The test items a run's best skill scored below the initial skill on (its control arms'
    record; none for a run without ``train.controls``)."""
    controls = summary.get("controls")
    if not isinstance(controls, dict):
        return []
    items = controls.get("worse_than_initial") or []
    return [{"seed": seed, "item_id": str(i)} for i in items]


def paired_record(diffs: Sequence[float], missing: int, split: str) -> dict[str, Any]:
    """The exact sign-flip test of best vs initial over per-item differences pooled over seeds,
    as the summaries record it (``missing``: items scored for only one of the two skills)."""
    return {
        "comparison": f"{split}: best skill vs initial skill, per item, pooled over seeds",
        **sign_flip_test(diffs).to_json(),
        "missing_pairs": missing,
    }


def run_status(run_dir: Path, summary: Any) -> str:
    """A run's status: its summary.json's (``finished``, ``budget_exhausted``...), else
    ``unfinished`` (started: config.json, no summary yet) or ``not started``."""
    if isinstance(summary, dict):
        return str(summary.get("status", "unknown"))
    return "unfinished" if RunPaths(run_dir).config.exists() else "not started"


def check_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's check-target test scores (``summary.json`` -> ``check_targets.targets``) with
    every metric a finite number; none for a run without check targets."""
    checks = summary.get("check_targets")
    rows = checks.get("targets", []) if isinstance(checks, dict) else []
    return [
        r
        for r in rows
        if isinstance(r, dict)
        and isinstance(r.get("target"), str)
        and all(isinstance(r.get(m), (int, float)) and math.isfinite(r[m]) for m in CHECK_METRICS)
    ]


def write_sweep_summary(sweep_dir: Path, code: CodeProvenance | None = None) -> dict[str, Any]:
    """Build and write ``sweep_summary.json``, with ``code``: the code writing it (default:
    skillgrad's own, ``runs/provenance.py``); each configuration's ``runs_code`` lists the code
    its finished runs recorded."""
    summary = build_sweep_summary(sweep_dir)
    summary["code"] = (code or code_provenance()).to_json()
    atomic_write_json(Path(sweep_dir) / SUMMARY_FILE, summary)
    return summary


def load_sweep_summary(sweep_dir: Path) -> dict[str, Any] | None:
    path = Path(sweep_dir) / SUMMARY_FILE
    fix = f"It is computed from the runs: delete it; `skillgrad report {sweep_dir}` rebuilds it."
    data = read_json(path, what="the sweep's summary", fix=fix)
    return data if isinstance(data, dict) and "configs" in data else None


__all__ = [
    "CHECK_METRICS",
    "METRICS",
    "build_sweep_summary",
    "check_rows",
    "load_sweep_summary",
    "metric_stats",
    "own_item_scores",
    "paired_diffs",
    "paired_record",
    "run_metrics",
    "run_status",
    "test_paired_diffs",
    "unique_params",
    "worse_items",
    "write_sweep_summary",
]
