"""Gate (validation): accept a candidate skill only on strict improvement on the selection split
(by more than ``train.gate_min_delta``, default 0: any improvement).

Items are evaluated in a fixed order, in chunks of ``chunk`` items. After each chunk the gate
stops as soon as the candidate can no longer beat the incumbent even if every remaining item
scored 1.0 — lossless: the decision is the one a full evaluation would reach.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from skillgrad.models.base import ModelBackend
from skillgrad.runs.cache import CallCache
from skillgrad.tasks.base import Task
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.train.rollout import rollout
from skillgrad.types import GateResult, Item, Trajectory

EPS = 1e-9


def can_still_win(scored_sum: float, remaining: int, incumbent_sum: float) -> bool:
    """True while the best possible final sum still strictly beats the incumbent's."""
    return scored_sum + remaining > incumbent_sum + EPS


def decide(candidate_sum: float, incumbent_sum: float) -> bool:
    return candidate_sum > incumbent_sum + EPS


@dataclass(frozen=True)
class GateOutcome:
    result: GateResult
    trajectories: tuple[Trajectory, ...]


async def gate(
    task: Task,
    items: Sequence[Item],
    candidate: str,
    incumbent_score: float,
    backend: ModelBackend,
    *,
    chunk: int,
    store: CallCache | None = None,
    progress: Progress | None = None,
    early_stop: bool = True,
    require_improvement: bool = True,
    min_delta: float = 0.0,
) -> GateOutcome:
    """Accept iff the candidate's mean score exceeds ``incumbent_score + min_delta`` (strictly);
    stop early, losslessly, once that is out of reach."""
    progress = progress or NullProgress()
    total = len(items)
    incumbent_sum = (incumbent_score + min_delta) * total  # the bar to clear
    scored: list[Trajectory] = []
    progress.start("gate", total)
    try:
        for start in range(0, total, chunk):
            part = items[start : start + chunk]
            scored += await rollout(
                task, part, candidate, backend, workers=chunk, store=store, stage="gate"
            )
            progress.advance("gate", len(part))
            cand_sum = sum(t.score.value for t in scored)
            remaining = total - len(scored)
            if early_stop and remaining and not can_still_win(cand_sum, remaining, incumbent_sum):
                return _outcome(scored, total, incumbent_score, early=True)
    finally:
        progress.finish("gate")
    cand_sum = sum(t.score.value for t in scored)
    accepted = decide(cand_sum, incumbent_sum) if require_improvement else True
    return _outcome(scored, total, incumbent_score, early=False, accepted=accepted)


def _outcome(
    scored: list[Trajectory],
    total: int,
    incumbent: float,
    *,
    early: bool,
    accepted: bool = False,
) -> GateOutcome:
    mean = sum(t.score.value for t in scored) / max(1, len(scored))
    if early:
        reason = f"early rejection after {len(scored)}/{total}: cannot beat {incumbent:.4f}"
    elif accepted:
        reason = f"improved {incumbent:.4f} -> {mean:.4f}"
    else:
        reason = f"no strict improvement ({mean:.4f} <= {incumbent:.4f})"
    result = GateResult(accepted, incumbent, mean, len(scored), total, early, reason)
    return GateOutcome(result, tuple(scored))


__all__ = ["GateOutcome", "can_still_win", "decide", "gate"]
