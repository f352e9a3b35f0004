"""Matplotlib figures of one run's history, rendered headless to PNG bytes.

Uses ``matplotlib.figure.Figure`` directly (no pyplot global state, no display needed). Every
function takes a ``RunData`` and returns PNG bytes, or None when the run has nothing to plot.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from skillgrad.runs.io import atomic_write_bytes
from skillgrad.runs.view import RunData
from skillgrad.types import StepRecord

Field = Callable[[StepRecord], float | None]

CATEGORY_COLORS = {
    "improved": "#2ca02c",
    "regressed": "#d62728",
    "persistent_fail": "#7f7f7f",
    "stable_success": "#1f77b4",
}


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return buf.getvalue()


def _new(title: str, ylabel: str, size: tuple[float, float] = (7.0, 3.2)) -> tuple[Figure, Axes]:
    fig = Figure(figsize=size)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps and epochs are whole numbers
    ax.grid(alpha=0.3)
    return fig, ax


def _series(history: list[StepRecord], value: Field) -> tuple[list[int], list[float]]:
    """(steps, values) of one field, skipping steps where it is None."""
    xs, ys = [], []
    for r in history:
        v = value(r)
        if v is not None:
            xs.append(r.step)
            ys.append(float(v))
    return xs, ys


def val_score(r: StepRecord) -> float:
    return r.val_score


def best_score(r: StepRecord) -> float:
    return r.best_score


def plot_scores(run: RunData) -> bytes | None:
    """Selection score per step, best-so-far and train score; accepted/rejected steps marked."""
    if not run.history:
        return None
    fig, ax = _new("Selection score per step", "score")
    curves: tuple[tuple[str, Field, str], ...] = (
        ("val_score", val_score, "-"),
        ("best_score", best_score, "--"),
        ("train_score", lambda r: r.train_score, ":"),
    )
    for label, value, style in curves:
        xs, ys = _series(run.history, value)
        if xs:
            ax.plot(xs, ys, style, label=label)
    for accepted, marker, color, label in ((True, "o", "#2ca02c", "accepted"),
                                           (False, "x", "#d62728", "rejected")):  # fmt: skip
        rows = [r for r in run.history if r.accepted == accepted]
        xs, ys = _series(rows, val_score)
        if xs:
            ax.scatter(xs, ys, marker=marker, color=color, zorder=3, label=label)
    slow = [r.step for r in run.history if r.kind == "slow_update"]
    for i, s in enumerate(slow):
        ax.axvline(s, color="#9467bd", alpha=0.4, label="slow update" if i == 0 else None)
    ax.legend(fontsize=7, loc="lower right")
    return _png(fig)


def plot_skill_tokens(run: RunData) -> bytes | None:
    """Skill length (tokens) in force and of the candidate, on the step axis."""
    xs, ys = _series(run.history, lambda r: r.skill_tokens)
    if not xs:
        return None
    fig, ax = _new("Skill length", "tokens")
    ax.plot(xs, ys, "-o", label="skill in force")
    cx, cy = _series(run.history, lambda r: r.candidate_tokens)
    if cx:
        ax.plot(cx, cy, ":", label="candidate")
    ax.legend(fontsize=7)
    return _png(fig)


def plot_lr(run: RunData) -> bytes | None:
    """The learning rate (after rejection decay) and edits allowed per step."""
    xs, ys = _series(run.history, lambda r: r.lr)
    if not xs:
        return None
    fig, ax = _new("Learning rate used", "lr")
    ax.step(xs, ys, where="mid", label="lr")
    kx, ky = _series(run.history, lambda r: r.k)
    if kx:
        ax.plot(kx, ky, "s", alpha=0.6, label="k (edits allowed)")
    ax.legend(fontsize=7)
    return _png(fig)


def acceptance_curve(history: list[StepRecord]) -> tuple[list[int], list[float]]:
    """Cumulative edit acceptance rate: accepted edits / edits applied to candidates so far."""
    xs, ys, acc, applied = [], [], 0, 0
    for r in history:
        n = r.n_applied
        applied += n
        acc += n if r.accepted else 0
        if applied:
            xs.append(r.step)
            ys.append(acc / applied)
    return xs, ys


def plot_acceptance(run: RunData) -> bytes | None:
    xs, ys = acceptance_curve(run.history)
    if not xs:
        return None
    fig, ax = _new("Edit acceptance rate (cumulative)", "accepted / applied")
    ax.plot(xs, ys, "-o")
    ax.set_ylim(0, 1.05)
    return _png(fig)


PER_ROLE: dict[str, Callable[[StepRecord], dict[str, Any]]] = {
    "cost": lambda r: r.cost,
    "calls": lambda r: r.calls,
}


def cumulative_by_role(history: list[StepRecord], key: str) -> dict[str, list[float]]:
    """Running totals of a per-role field (``cost`` or ``calls``), one value per step."""
    per_role = PER_ROLE[key]
    roles = sorted({role for r in history for role in per_role(r)})
    totals = dict.fromkeys(roles, 0.0)
    out: dict[str, list[float]] = {role: [] for role in roles}
    for r in history:
        for role in roles:
            totals[role] += float(per_role(r).get(role) or 0.0)
            out[role].append(totals[role])
    return out


def plot_usage(run: RunData) -> bytes | None:
    """Cumulative cost and calls per role over time."""
    if not run.history:
        return None
    steps = [r.step for r in run.history]
    fig = Figure(figsize=(7.0, 3.2))
    for i, (key, label) in enumerate((("cost", "cost (USD)"), ("calls", "calls"))):
        ax = fig.add_subplot(1, 2, i + 1)
        for role, ys in cumulative_by_role(run.history, key).items():
            ax.plot(steps, ys, label=role)
        ax.set_title(f"Cumulative {key} per role")
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def plot_slow_categories(run: RunData) -> bytes | None:
    """Stacked bars of slow-update item categories per epoch."""
    if not run.slow_categories:
        return None
    epochs = list(run.slow_categories)
    fig, ax = _new("Slow-update categories per epoch", "items")
    ax.set_xlabel("epoch")
    bottom = [0.0] * len(epochs)
    names = list(CATEGORY_COLORS) + sorted(
        {c for d in run.slow_categories.values() for c in d.get("counts", {})}
        - set(CATEGORY_COLORS)
    )
    for cat in names:
        vals = [float(run.slow_categories[e].get("counts", {}).get(cat, 0)) for e in epochs]
        positions = list(range(len(epochs)))
        ax.bar(positions, vals, bottom=bottom, label=cat, color=CATEGORY_COLORS.get(cat))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xticks(list(range(len(epochs))), [str(e) for e in epochs])
    ax.legend(fontsize=7)
    return _png(fig)


FIGURES: dict[str, Callable[[RunData], bytes | None]] = {
    "scores": plot_scores,
    "skill_tokens": plot_skill_tokens,
    "lr": plot_lr,
    "acceptance": plot_acceptance,
    "usage": plot_usage,
    "slow_categories": plot_slow_categories,
}


def render_figures(run: RunData, out_dir: Path | None = None) -> dict[str, bytes]:
    """Render every figure that has data; also save them as ``out_dir/<name>.png`` if given."""
    out: dict[str, bytes] = {}
    for name, fn in FIGURES.items():
        png = fn(run)
        if png is None:
            continue
        out[name] = png
        if out_dir is not None:
            atomic_write_bytes(out_dir / f"{name}.png", png)
    return out


__all__ = [
    "FIGURES",
    "acceptance_curve",
    "cumulative_by_role",
    "render_figures",
]
