"""One training step: rollout -> (explore) -> reflect -> aggregate -> select -> update -> gate
-> prune.

Each phase is a function in its own module; this file wires them in method.md order, writes the
step's artifacts, and returns the outcome (``loop.commit`` advances the state with it). The
candidate's own phases
(reflect -> update, then leak check, gate and check targets) are in ``train/candidate.py``;
exploration of the failed train items (``train.explore``) is ``train/explore.py``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.runs.records import RejectedEdit
from skillgrad.train.adherence import Adherence, judge_adherence
from skillgrad.train.candidate import (
    Candidate,
    example_alone,
    judge_candidate,
    propose_candidate,
)
from skillgrad.train.context import RunContext
from skillgrad.train.explore import Exploration, explore
from skillgrad.train.prune import Pruned, prune
from skillgrad.train.rollout import mean_score
from skillgrad.train.select import edits_allowed, effective_lr
from skillgrad.train.state import StepOutcome, TrainState, rejected_entry
from skillgrad.types import Item


def sample_batch(items: Sequence[Item], seed: int, epoch: int, index: int, size: int) -> list[Item]:
    """The ``index``-th batch of an epoch: a seeded shuffle per (seed, epoch), then slices
    (wrapping around at the end; a batch never holds the same item twice)."""
    order = list(items)
    size = min(size, len(order))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    start = (index * size) % len(order)
    batch = order[start : start + size]
    return batch + order[: size - len(batch)] if len(batch) < size else batch


async def training_step(ctx: RunContext, state: TrainState) -> StepOutcome:
    """One step of method.md: propose edits, update a copy of the skill, gate it."""
    t, step = ctx.cfg.train, state.global_step + 1
    lr = effective_lr(ctx.schedule, state.train_step + 1, t.lr_decay_on_reject, state.rejections)
    k = edits_allowed(lr)
    ctx.emit("step_start", step=step, epoch=state.epoch, lr=lr, k=k)
    clock = Stopwatch()
    batch = sample_batch(ctx.items["train"], t.seed, state.epoch, state.step_in_epoch, t.batch_size)
    with call_context("rollout", step):
        trajs = await ctx.rollout(batch, state.skill)
    clock.lap("rollout")
    explored = None
    if t.explore == "on":  # the target retries its failed train items
        with call_context("explore", step):
            explored = await explore(ctx, state, step, trajs)
        clock.lap("explore")
    kept_to = await judge_adherence(ctx, step, state.skill, trajs)  # train.adherence
    ignored = kept_to.ignored() if kept_to else []
    shown = await propose_candidate(ctx, state, step, k, trajs, ignored, explored)  # reflect ...
    clock.lap("reflect")
    await judge_candidate(ctx, state, step, shown)
    if t.example_alone and (alone := example_alone(state, shown)) is not None:
        await judge_candidate(ctx, state, step, alone)
        shown = alone
    pruned = await prune(ctx, step, state.skill, shown.text, shown.outcome)
    clock.lap("gate")
    write_step(ctx, step, lr, k, trajs, shown, pruned, kept_to, explored)
    refl, outcome = shown.proposal.reflection, shown.outcome
    _, attempts, solved = explored.counts() if explored else (0, 0, 0)
    return StepOutcome(
        kind="step",
        lr=lr,
        k=k,
        candidate=pruned.text,
        gate=outcome.result if outcome else None,
        applied=tuple(shown.report),
        proposed=len(refl.edits),
        merged=len(shown.proposal.aggregated.edits),
        conflicts=tuple(shown.proposal.aggregated.conflicts),
        selected=len(shown.proposal.selection.selected),
        train_score=mean_score(trajs),
        n_failures=sum(not x.score.passed for x in trajs),
        n_reflections=refl.calls,
        n_failed_reflections=refl.failed_calls,
        gate_trajectories=outcome.trajectories if outcome else (),
        usage=ctx.usage(step),
        timings=clock.laps,
        skill_tokens=ctx.count_tokens(state.skill),
        candidate_tokens=ctx.count_tokens(pruned.text),
        no_gate=not t.gate,
        leaks=shown.leaks.new,
        refused=shown.refused,
        checks=shown.checks,
        stall=shown.stall,
        split=_split_entry(step, shown.split, state.current_score),
        pruned=pruned.removed,
        prune_kept=pruned.kept,
        adherence=tuple(kept_to.rows) if kept_to else (),
        explore_attempts=attempts,
        explore_found=solved,
        explore_repeats=explored.repeats if explored else 0,
        explore_better=len(explored.improved(trajs)) if explored else 0,
        explore_resumed=explored.resumed if explored else 0,
        explore_redrawn=explored.redrawn if explored else 0,
        explore_ends=explored.ends() if explored else {},
        explore_fell=explored.fell if explored else 0,
    )


def _split_entry(step: int, first: Candidate | None, score: float) -> RejectedEdit | None:
    """The rejected-buffer entry of the candidate rejected before the example was gated alone."""
    if first is None:
        return None
    gate = first.outcome.result if first.outcome else None
    return rejected_entry(step, gate, tuple(first.report), first.refused, first.checks, score)


def write_step(
    ctx: RunContext,
    step: int,
    lr: float,
    k: int,
    trajs: Sequence[Any],
    cand: Candidate,
    pruned: Pruned | None = None,
    adherence: Adherence | None = None,
    explored: Exploration | None = None,
) -> None:
    """The step directory: the trajectories, the exploration attempts (``train.explore``), the
    candidate's files and, when lines were tried for removal after the gate, ``prune.json``;
    with ``train.adherence``, ``adherence.json``."""
    files = {"trajectories.jsonl": trajs, **cand.files(lr, k)}
    if explored is not None:
        files["exploration.jsonl"] = [a.to_json() for a in explored.attempts]
    if pruned is not None and pruned.trials:
        files["prune.json"] = pruned.to_json()
    if adherence is not None:
        files["adherence.json"] = adherence.record
    ctx.run.write_artifacts(ctx.run.paths.step_dir(step), files)


class Stopwatch:
    """Seconds per stage (``laps``), for the step record; never part of the results."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = now - self._last
        self._last = now


__all__ = [
    "Stopwatch",
    "sample_batch",
    "training_step",
    "write_step",
]
