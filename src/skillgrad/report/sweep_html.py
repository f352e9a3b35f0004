"""Figures and the HTML page of a sweep report (matplotlib + jinja2: the ``report`` extra).

Figures: test score of the initial and the best skill per grid configuration (mean with its 95%
interval, every seed as a dot), and the test gain per configuration with its interval; the
transfer matrix (``skillgrad transfer``) as a table when the sweep has one.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from skillgrad.report.html import environment
from skillgrad.report.plots import _png
from skillgrad.report.sweep import (
    RUN_COLUMNS,
    SHOWN,
    TRANSFER_COLUMNS,
    exploration_text,
    interval_text,
    load_summary_or_fail,
    paired_text,
    params_label,
    run_cells,
    transfer_rows,
)
from skillgrad.runs.io import atomic_write_bytes, atomic_write_text
from skillgrad.sweep.transfer_matrix import load_transfer_summary


def _errorbar(ax: Any, x: float, stat: dict[str, Any], color: str, label: str | None) -> None:
    if stat.get("mean") is None:
        return
    lo, hi, mean = stat["ci_low"], stat["ci_high"], stat["mean"]
    ax.errorbar([x], [mean], yerr=[[mean - lo], [hi - mean]], fmt="o", color=color, capsize=4,
                label=label)  # fmt: skip
    values = stat.get("values") or []
    ax.scatter([x + 0.08] * len(values), values, s=10, color=color, alpha=0.45)


def _scores_figure(configs: list[dict[str, Any]]) -> bytes:
    fig = Figure(figsize=(max(5.0, 1.6 * len(configs) + 2), 3.4))
    ax = fig.add_subplot(1, 1, 1)
    for i, c in enumerate(configs):
        _errorbar(ax, i - 0.15, c["test_initial"], "#7f7f7f", "initial skill" if i == 0 else None)
        _errorbar(ax, i + 0.15, c["test_best"], "#1f77b4", "best skill" if i == 0 else None)
    _axes(ax, configs, "Held-out test score (mean, 95% CI, seeds as dots)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _gain_figure(configs: list[dict[str, Any]]) -> bytes:
    fig = Figure(figsize=(max(5.0, 1.6 * len(configs) + 2), 3.0))
    ax = fig.add_subplot(1, 1, 1)
    for i, c in enumerate(configs):
        _errorbar(ax, i, c["test_gain"], "#2ca02c", None)
    ax.axhline(0.0, color="#999", lw=0.8)
    _axes(ax, configs, "Test gain (best - initial), mean and 95% CI")
    fig.tight_layout()
    return _png(fig)


def _axes(ax: Any, configs: list[dict[str, Any]], title: str) -> None:
    ax.set_title(title)
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels([params_label(c["params"]) for c in configs], fontsize=7, rotation=15)
    ax.set_xlim(-0.6, len(configs) - 0.4)
    ax.grid(alpha=0.3, axis="y")


def sweep_figures(summary: dict[str, Any]) -> dict[str, bytes]:
    configs = summary["configs"]
    return {"sweep_test_scores": _scores_figure(configs), "sweep_test_gain": _gain_figure(configs)}


def render_sweep_html(
    summary: dict[str, Any], figures: dict[str, bytes], transfer: dict[str, Any] | None = None
) -> str:
    """The page; ``transfer`` (transfer_summary.json) adds the transfer matrix."""
    return (
        environment()
        .get_template("sweep.html.j2")
        .render(
            s=summary,
            transfer=transfer,
            transfer_columns=TRANSFER_COLUMNS,
            transfer_rows=transfer_rows,
            metrics=("val_initial", *SHOWN),
            figures={k: base64.b64encode(v).decode("ascii") for k, v in figures.items()},
            interval_text=interval_text,
            paired_text=paired_text,
            params_label=params_label,
            exploration_text=exploration_text,
            run_columns=RUN_COLUMNS,
            run_cells=run_cells,
        )
    )


def write_sweep_html(sweep_dir: Path, out: Path | None = None) -> Path:
    """Write ``sweep_report.html`` (figures inline) and ``figures/*.png`` (the report extra)."""
    summary = load_summary_or_fail(Path(sweep_dir))
    figures = sweep_figures(summary)
    fig_dir = Path(sweep_dir) / "figures"
    for name, png in figures.items():
        atomic_write_bytes(fig_dir / f"{name}.png", png)
    target = Path(out) if out is not None else Path(sweep_dir) / "sweep_report.html"
    transfer = load_transfer_summary(Path(sweep_dir))
    atomic_write_text(target, render_sweep_html(summary, figures, transfer))
    return target


__all__ = ["render_sweep_html", "sweep_figures", "write_sweep_html"]
