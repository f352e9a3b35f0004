"""Compare several runs: overlaid score curves, a table of final numbers, config differences.

``compare_runs`` loads each run (finished or not), ``write_compare_html`` writes a
self-contained page with the overlaid curves embedded as a base64 PNG.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from skillgrad.errors import RunDirError
from skillgrad.report.plots import _png, _series, best_score, val_score
from skillgrad.runs.io import atomic_write_bytes, atomic_write_text, flatten
from skillgrad.runs.view import RunData, load_run

# Keys that differ between any two runs by construction and say nothing about the setup.
IGNORED_CONFIG_KEYS = ("run_name", "resolved_at")


@dataclass(frozen=True)
class CompareResult:
    names: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    config_diff: dict[str, tuple[Any, ...]]
    curves_png: bytes = field(repr=False, default=b"")


def _final_row(run: RunData) -> dict[str, Any]:
    s = run.summary or {}
    last = run.history[-1] if run.history else None
    usage_all = (s.get("usage") or {}).get("all") or {}
    return {
        "run": run.name,
        "status": run.status,
        "steps": s.get("steps", len(run.history)),
        "val_initial": s.get("val_initial"),
        "val_best": s.get("val_best", run.best_score),
        "test_initial": s.get("test_initial"),
        "test_best": s.get("test_best"),
        "acceptance_rate": s.get("acceptance_rate"),
        "skill_tokens_best": s.get("skill_tokens_best", last.skill_tokens if last else None),
        "cost": usage_all.get("cost", last.cum_cost if last else None),
        "calls": usage_all.get("calls", last.cum_calls if last else None),
    }


def config_differences(runs: list[RunData]) -> dict[str, tuple[Any, ...]]:
    """Flattened config keys whose values are not the same in every run (missing -> None)."""
    flats = [flatten(r.config) for r in runs]
    keys = sorted(set().union(*flats)) if flats else []
    out: dict[str, tuple[Any, ...]] = {}
    for k in keys:
        if k in IGNORED_CONFIG_KEYS:
            continue
        values = tuple(f.get(k) for f in flats)
        if len({repr(v) for v in values}) > 1:
            out[k] = values
    return out


def _curves(runs: list[RunData], labels: list[str]) -> bytes:
    fig = Figure(figsize=(8.0, 3.4))
    ax_val = fig.add_subplot(1, 2, 1)
    ax_best = fig.add_subplot(1, 2, 2)
    for run, label in zip(runs, labels, strict=True):
        xs, ys = _series(run.history, val_score)
        ax_val.plot(xs, ys, "-o", markersize=3, label=label)
        bx, by = _series(run.history, best_score)
        ax_best.plot(bx, by, "-", label=label)
    for ax, title in ((ax_val, "Selection score per step"), (ax_best, "Best so far")):
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _labels(runs: list[RunData]) -> list[str]:
    """Run names, made unique with the parent folder when two runs share a name."""
    names = [r.name for r in runs]
    return [f"{r.root.parent.name}/{r.name}" if names.count(r.name) > 1 else r.name for r in runs]


def expand_sweeps(dirs: list[Path]) -> list[Path]:
    """A sweep directory stands for every run in it (in plan order); run directories stay."""
    from skillgrad.sweep.plan import load_plan_record

    out: list[Path] = []
    for d in dirs:
        record = load_plan_record(Path(d))
        jobs = record.get("jobs", []) if record else []
        out += [Path(d) / j["name"] for j in jobs if (Path(d) / j["name"]).is_dir()] or [Path(d)]
    return out


def compare_runs(run_dirs: list[Path]) -> CompareResult:
    run_dirs = expand_sweeps(run_dirs)
    if len(run_dirs) < 2:
        raise RunDirError(
            f"compare needs at least two run directories, got {len(run_dirs)}; "
            "usage: skillgrad compare RUN_DIR RUN_DIR [...] (or a sweep directory)"
        )
    runs = [load_run(Path(d)) for d in run_dirs]
    labels = _labels(runs)
    rows = [_final_row(r) | {"run": label} for r, label in zip(runs, labels, strict=True)]
    return CompareResult(
        names=tuple(labels),
        rows=tuple(rows),
        config_diff=config_differences(runs),
        curves_png=_curves(runs, labels),
    )


def write_compare_html(result: CompareResult, out: Path) -> Path:
    """Write the comparison page (and ``compare_curves.png`` next to it)."""
    from skillgrad.report.html import environment  # late: html imports provenance/plots

    out = Path(out)
    atomic_write_bytes(out.with_name("compare_curves.png"), result.curves_png)
    page = (
        environment()
        .get_template("compare.html.j2")
        .render(
            result=result,
            curves=base64.b64encode(result.curves_png).decode("ascii"),
            columns=list(result.rows[0]) if result.rows else [],
        )
    )
    atomic_write_text(out, page)
    return out


__all__ = [
    "CompareResult",
    "compare_runs",
    "config_differences",
    "expand_sweeps",
    "write_compare_html",
]
