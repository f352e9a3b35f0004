"""Gate (validation): accept a candidate skill only if it beats the incumbent on the selection
split, compared item by item, under ``train.gate_rule``:

- ``strict`` (default, the seed's rule): the mean paired difference (candidate minus incumbent,
  per item) exceeds ``train.gate_min_delta`` — i.e. the candidate's mean is strictly higher.
- ``paired``: the one-sided lower confidence bound (level ``train.gate_confidence``) of the mean
  paired difference exceeds ``gate_min_delta``: the exact one-sided sign-flip test of
  ``mean <= gate_min_delta`` rejects at ``1 - gate_confidence`` (``skillgrad.stats``; why this
  method: ``docs/gate.md``).

Items with an infrastructure failure (``infra_error`` after a rollout-level retry, for every
sample) are missing data: left out for both skills and counted (``GateResult.missing``).

Lossless early rejection (both rules): the candidate's evaluation stops as soon as it could no
longer be accepted even if every sample not yet scored came back 1.0 (the maximum score). Both
rules are monotone — raising one item's difference never turns an acceptance into a rejection,
and a missing item is the same as a difference of exactly ``gate_min_delta`` — so "not even the
best completion is accepted" implies the full evaluation rejects too. Units are (item, sample)
pairs evaluated ``workers`` at a time in a fixed order: sample 0 of every item before sample 1,
and within a sample the items the incumbent scored lowest first. Each scored unit lowers the
candidate's best case by its shortfall from 1.0, which is largest where the incumbent failed
(a candidate close to the incumbent fails there too): that order reveals a losing candidate
soonest. The check runs after every finished unit; units already in flight are finished (and
cached), none is started after the decision.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from skillgrad.models.base import ModelBackend
from skillgrad.runs.cache import ResultStore
from skillgrad.runs.records import GateResult, GateRuleName
from skillgrad.stats import sign_flip_interval, sign_flip_p_greater, sign_flip_rejects
from skillgrad.tasks.base import Task
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.train.rollout import ItemScore, check_systemic, mean_item_score, rollout_item
from skillgrad.types import Item, Score, Trajectory

EPS = 1e-9
_ZERO = Trajectory("", "", (), "", Score(0.0, False))  # a unit scored 0 (what-if only)
MAX_SCORE = 1.0  # scores are in [0, 1]: the best an unscored sample can come back


@dataclass(frozen=True)
class GateRule:
    """The decision on the paired differences (candidate minus incumbent) of the items both
    skills were scored on. ``accepts`` is monotone in every difference (see the module doc).

    ``tolerance`` and ``tolerance_paired`` are the check-target rules
    (``train/check_targets.py``; ``min_delta`` is minus ``train.check_targets_tolerance``).
    ``tolerance`` accepts unless the mean difference is below ``min_delta`` (a loss of exactly
    the tolerance still passes); ``tolerance_paired`` accepts unless the one-sided exact
    sign-flip test says, at ``confidence``, that the mean difference is below ``min_delta``:
    only a loss beyond the tolerance that the items establish refuses, not one item's noise."""

    rule: GateRuleName = "strict"
    confidence: float = 0.9
    min_delta: float = 0.0

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    def accepts(self, diffs: Sequence[float]) -> bool:
        shifted = [d - self.min_delta for d in diffs]
        if self.rule == "strict":
            return math.fsum(shifted) > EPS
        if self.rule == "tolerance":
            return math.fsum(shifted) >= -EPS
        if self.rule == "tolerance_paired":
            return not sign_flip_rejects([-s for s in shifted], self.alpha)
        return sign_flip_rejects(shifted, self.alpha)

    def best_case(self, incumbent: float, seen: Sequence[float], unseen: int) -> float:
        """The largest difference an item can still end with: its unscored samples at
        ``MAX_SCORE``, or (when they all go missing) left out, which counts as ``min_delta``."""
        if unseen == 0:
            return math.fsum(seen) / len(seen) - incumbent if seen else self.min_delta
        best = (math.fsum(seen) + unseen * MAX_SCORE) / (len(seen) + unseen) - incumbent
        return max(best, self.min_delta)

    def describe(self) -> str:
        if self.rule == "strict":
            return f"strict (mean difference > {self.min_delta:g})"
        if self.rule == "tolerance":
            return f"tolerance (mean difference >= {self.min_delta:g})"
        if self.rule == "tolerance_paired":
            return (
                f"tolerance_paired (refused when {self.confidence:.0%} sure the mean difference "
                f"< {self.min_delta:g}, exact sign-flip)"
            )
        return (
            f"paired ({self.confidence:.0%} lower bound of the mean difference "
            f"> {self.min_delta:g}, exact sign-flip)"
        )


@dataclass(frozen=True)
class GateOutcome:
    """The decision, every candidate trajectory scored, and both skills' per-item scores (the
    candidate's only for the items it was evaluated on)."""

    result: GateResult
    trajectories: tuple[Trajectory, ...]
    candidate: Mapping[str, ItemScore]
    incumbent: Mapping[str, ItemScore]


def evaluation_order(
    items: Sequence[Item], incumbent: Mapping[str, ItemScore], samples: int
) -> list[tuple[Item, int]]:
    """(item, sample) units: sample by sample; within one, the incumbent's lowest scores first
    (ties in split order). Items missing for the incumbent are not evaluated at all."""
    present = [i for i in items if incumbent[i.id].value is not None]
    ranked = sorted(present, key=lambda i: incumbent[i.id].value or 0.0)
    return [(item, k) for k in range(samples) for item in ranked]


async def gate(
    task: Task,
    items: Sequence[Item],
    candidate: str,
    incumbent: Mapping[str, ItemScore],
    backend: ModelBackend,
    *,
    rule: GateRule,
    workers: int,
    samples: int = 1,
    seed: int = 0,
    temperature: float | None = None,
    store: ResultStore | None = None,
    progress: Progress | None = None,
    early_stop: bool = True,
    require_improvement: bool = True,
    stage: str = "gate",
) -> GateOutcome:
    """Evaluate ``candidate`` against the incumbent's per-item scores (``incumbent[item.id]``
    for every item) and decide under ``rule``; see the module docstring for the contract."""
    progress = progress or NullProgress()
    units = evaluation_order(items, incumbent, samples)
    seen: dict[str, list[Trajectory]] = {i.id: [] for i in items}
    todo = {i.id: 0 for i in items}
    for item, _ in units:
        todo[item.id] += 1
    queue = list(reversed(units))
    running: set[asyncio.Future[tuple[str, Trajectory]]] = set()
    inflight: dict[asyncio.Future[tuple[str, Trajectory]], tuple[Item, int]] = {}

    async def one(item: Item, k: int) -> tuple[str, Trajectory]:
        traj = await rollout_item(
            task,
            item,
            candidate,
            backend,
            store=store,
            sample=k,
            seed=seed,
            temperature=temperature,
        )
        return item.id, traj

    progress.start(stage, len(units))
    # nothing scored yet: a split on which not even a perfect candidate passes is decided now
    early = early_stop and bool(queue) and not _can_still_accept(rule, seen, todo, incumbent)
    try:
        while running or (queue and not early):
            while queue and not early:
                ahead = [*inflight.values(), *reversed(queue[-workers:])]
                limit = (
                    _launch_limit(rule, seen, todo, incumbent, ahead, workers)
                    if early_stop
                    else workers
                )
                if len(running) >= limit:
                    break
                item, k = queue.pop()
                launched = asyncio.ensure_future(one(item, k))
                running.add(launched)
                inflight[launched] = (item, k)
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            # every failure retrieved (no "exception was never retrieved"); the first is raised
            errors = [e for f in done if not f.cancelled() and (e := f.exception()) is not None]
            if errors:
                raise errors[0]
            for fut in done:
                del inflight[fut]
                item_id, traj = fut.result()
                seen[item_id].append(traj)
                todo[item_id] -= 1
                progress.advance(stage, info=f"{traj.score.value:.2f}")
            if early_stop and not early and queue:
                early = not _can_still_accept(rule, seen, todo, incumbent)
    finally:
        for fut in running:
            fut.cancel()
        progress.finish(stage)
    scored = [t for ts in seen.values() for t in ts]
    if not early:  # a partial evaluation proves nothing systemic (and stays lossless)
        check_systemic(scored, stage)
    cand = {i: ItemScore(i, tuple(ts)) for i, ts in seen.items() if ts}
    return _outcome(rule, items, cand, incumbent, scored, early, require_improvement)


def _can_still_accept(
    rule: GateRule,
    seen: Mapping[str, list[Trajectory]],
    todo: Mapping[str, int],
    incumbent: Mapping[str, ItemScore],
) -> bool:
    """Whether the best completion of the evaluation (every unscored sample at ``MAX_SCORE``)
    would be accepted."""
    best: list[float] = []
    for item_id, trajs in seen.items():
        inc = incumbent[item_id].value
        if inc is None:
            continue
        present = [t.score.value for t in trajs if t.infra_error is None]
        best.append(rule.best_case(inc, present, todo[item_id]))
    return rule.accepts(best)


def _launch_limit(
    rule: GateRule,
    seen: Mapping[str, list[Trajectory]],
    todo: Mapping[str, int],
    incumbent: Mapping[str, ItemScore],
    ahead: Sequence[tuple[Item, int]],
    workers: int,
) -> int:
    """Units to have in flight: ``workers``, or ``j`` when the ``j`` units ahead (those in
    flight, then the next in order) all scoring 0 would already settle a rejection — a unit
    launched beyond them could only be a wasted call if they do."""
    trial = {k: list(v) for k, v in seen.items()}
    left = dict(todo)
    for j, (item, _) in enumerate(ahead[: workers - 1]):
        trial[item.id].append(_ZERO)
        left[item.id] -= 1
        if not _can_still_accept(rule, trial, left, incumbent):
            return j + 1
    return workers


def paired_diffs(
    candidate: Mapping[str, ItemScore], incumbent: Mapping[str, ItemScore]
) -> tuple[dict[str, float], int]:
    """Per item scored by both: candidate minus incumbent; and how many items were missing for
    either skill (evaluated but left out)."""
    diffs: dict[str, float] = {}
    missing = 0
    for item_id, c in candidate.items():
        cv, iv = c.value, incumbent[item_id].value
        if cv is None or iv is None:
            missing += 1
            continue
        diffs[item_id] = cv - iv
    return diffs, missing


@dataclass(frozen=True)
class Attribution:
    """Items an evaluated candidate flipped relative to the incumbent."""

    fixed: tuple[str, ...]
    broken: tuple[str, ...]


def attribution(
    candidate: Mapping[str, ItemScore], incumbent: Mapping[str, ItemScore]
) -> Attribution:
    """fail->pass (``fixed``) and pass->fail (``broken``) items, in item-id order."""
    fixed, broken = [], []
    for item_id in sorted(candidate):
        c, i = candidate[item_id].passed, incumbent[item_id].passed
        if c is None or i is None:
            continue
        if c and not i:
            fixed.append(item_id)
        elif i and not c:
            broken.append(item_id)
    return Attribution(tuple(fixed), tuple(broken))


def _outcome(
    rule: GateRule,
    items: Sequence[Item],
    cand: dict[str, ItemScore],
    incumbent: Mapping[str, ItemScore],
    scored: list[Trajectory],
    early: bool,
    require_improvement: bool,
) -> GateOutcome:
    diffs, missing_evaluated = paired_diffs(cand, incumbent)
    missing_incumbent = sum(1 for i in items if incumbent[i.id].value is None)
    values = list(diffs.values())
    # on the paired items; with none evaluated (rejected before evaluation), on all of them
    inc_mean = mean_item_score([incumbent[i] for i in diffs] or [incumbent[i.id] for i in items])
    cand_mean = mean_item_score(list(cand.values()))
    if early:
        accepted = False
        reason = f"early rejection after {len(cand)}/{len(items)} items: cannot pass {rule.rule}"
    else:
        accepted = rule.accepts(values) if require_improvement else True
        verb = "accepted" if accepted else "rejected"
        reason = f"{verb} by {rule.describe()}: mean difference {_fmt(values)}"
        if not require_improvement:
            reason = "gate disabled (--no-gate): accepted without a decision"
    # the interval of a complete evaluation (an early rejection saw only part of the items)
    low, high = (
        sign_flip_interval(values, rule.confidence) if values and not early else (None, None)
    )
    shifted = [d - rule.min_delta for d in values]
    p_value = sign_flip_p_greater(shifted)[0] if values else None
    fix = attribution(cand, incumbent)
    result = GateResult(
        accepted=accepted,
        incumbent_score=inc_mean,
        candidate_score=cand_mean,
        evaluated=len(cand),
        total=len(items),
        early_rejected=early,
        reason=reason,
        rule=rule.rule,
        confidence=rule.confidence,
        paired_n=len(values),
        mean_diff=math.fsum(values) / len(values) if values else None,
        diff_low=low,
        diff_high=high,
        p_value=p_value,
        missing=missing_evaluated + missing_incumbent,
        fixed=fix.fixed,
        broken=fix.broken,
    )
    return GateOutcome(result, tuple(scored), cand, incumbent)


def _fmt(values: Sequence[float]) -> str:
    if not values:
        return "n/a (no item scored by both skills)"
    return f"{math.fsum(values) / len(values):+.4f} over {len(values)} items"


__all__ = [
    "EPS",
    "MAX_SCORE",
    "Attribution",
    "GateOutcome",
    "GateRule",
    "GateRuleName",
    "attribution",
    "evaluation_order",
    "gate",
    "paired_diffs",
]
