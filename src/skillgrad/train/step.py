"""One training step: rollout -> reflect -> aggregate -> select -> update -> gate.

Each phase is a function in its own module; this file wires them in method.md order, writes the
step's artifacts, and hands the outcome to ``state.advance``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.skill import Skill
from skillgrad.train.aggregate import Aggregated, aggregate
from skillgrad.train.context import RunContext
from skillgrad.train.gate import GateOutcome, GateRule, gate
from skillgrad.train.leaks import describe, new_leaks
from skillgrad.train.merge import semantic_merge
from skillgrad.train.reflect import ReflectConfig, ReflectResult, feedback_summary, reflect
from skillgrad.train.rollout import ItemScore, mean_score, score_items
from skillgrad.train.select import Selection, edits_allowed, effective_lr, select
from skillgrad.train.state import StepOutcome, TrainState, advance
from skillgrad.types import EditResult, Item, Leak, Trajectory, to_json


def sample_batch(items: Sequence[Item], seed: int, epoch: int, index: int, size: int) -> list[Item]:
    """The ``index``-th batch of an epoch: a seeded shuffle per (seed, epoch), then slices
    (wrapping around at the end; a batch never holds the same item twice)."""
    order = list(items)
    size = min(size, len(order))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    start = (index * size) % len(order)
    batch = order[start : start + size]
    return batch + order[: size - len(batch)] if len(batch) < size else batch


def reflect_config(ctx: RunContext) -> ReflectConfig:
    t = ctx.cfg.train
    return ReflectConfig(
        minibatch_size=t.minibatch_size,
        max_edits=t.max_edits_per_reflection,
        failure_only=t.failure_only,
        deep_threshold=t.deep_reflect_threshold,
        workers=ctx.cfg.hardware.analyst_workers,
        max_tokens=t.optimizer_max_tokens,
        temperature=ctx.cfg.models.optimizer.temperature,
    )


def gate_rule(ctx: RunContext) -> GateRule:
    """The run's gate rule (``train.gate_rule``, ``gate_confidence``, ``gate_min_delta``)."""
    t = ctx.cfg.train
    return GateRule(t.gate_rule, t.gate_confidence, t.gate_min_delta)


def sample_temperature(ctx: RunContext) -> float | None:
    """Temperature of repeated val samples (``samples_per_item > 1``): the target's."""
    return ctx.cfg.models.target.temperature if ctx.cfg.train.samples_per_item > 1 else None


async def val_scores(ctx: RunContext, skill: str, stage: str) -> list[ItemScore]:
    """``skill`` on every val item, ``train.samples_per_item`` samples each (cached)."""
    t = ctx.cfg.train
    return await score_items(
        ctx.task,
        ctx.items["val"],
        skill,
        ctx.target,
        samples=t.samples_per_item,
        workers=ctx.cfg.hardware.rollout_workers,
        store=ctx.store,
        progress=ctx.progress,
        stage=stage,
        seed=t.seed,
        temperature=sample_temperature(ctx),
    )


async def evaluate_candidate(
    ctx: RunContext, step: int, candidate: str, incumbent: str, stage: str = "gate"
) -> GateOutcome:
    """Gate a candidate against the incumbent skill on the selection split, item by item (full
    evaluation, no decision, under --no-gate). The incumbent's per-item scores come from the
    result cache (it was scored in full when it became the incumbent)."""
    t = ctx.cfg.train
    use_gate = t.gate
    with call_context(stage, step):
        inc = await val_scores(ctx, incumbent, f"{stage} (incumbent)")
        return await gate(
            ctx.task,
            ctx.items["val"],
            candidate,
            {s.item_id: s for s in inc},
            ctx.target,
            rule=gate_rule(ctx),
            workers=ctx.cfg.hardware.rollout_workers,
            samples=t.samples_per_item,
            seed=t.seed,
            temperature=sample_temperature(ctx),
            store=ctx.store,
            progress=ctx.progress,
            early_stop=use_gate,
            require_improvement=use_gate,
            stage=stage,
        )


@dataclass
class Proposal:
    """What rollout -> reflect -> aggregate -> select produced for one step."""

    trajectories: list[Trajectory]
    reflection: ReflectResult
    aggregated: Aggregated
    selection: Selection


async def training_step(ctx: RunContext, state: TrainState) -> TrainState:
    """One step of method.md: propose edits, update a copy of the skill, gate it, commit."""
    t, step = ctx.cfg.train, state.global_step + 1
    lr = effective_lr(ctx.schedule, state.train_step + 1, t.lr_decay_on_reject, state.rejections)
    k = edits_allowed(lr)
    ctx.emit("step_start", step=step, epoch=state.epoch, lr=lr, k=k)
    clock = Stopwatch()
    proposal = await propose(ctx, state, step, k, clock)
    candidate, report = Skill(state.skill).apply(proposal.selection.selected)  # update
    outcome, leaks, refused = None, LeakCheck(), ""
    if any(r.status == "applied" for r in report):
        leaks = check_leaks(ctx, state, candidate.text)
        refused = leak_refusal(ctx, step, leaks.new)
        if not refused:
            outcome = await evaluate_candidate(ctx, step, candidate.text, state.skill)
    clock.lap("gate")
    write_step(ctx, step, lr, k, proposal, candidate.text, report, outcome, leaks, refused)
    p, refl = proposal, proposal.reflection
    result = StepOutcome(
        kind="step",
        lr=lr,
        k=k,
        candidate=candidate.text,
        gate=outcome.result if outcome else None,
        applied=tuple(report),
        proposed=len(refl.edits),
        merged=len(p.aggregated.edits),
        conflicts=tuple(p.aggregated.conflicts),
        selected=len(p.selection.selected),
        train_score=mean_score(p.trajectories),
        n_failures=sum(not x.score.passed for x in p.trajectories),
        n_reflections=refl.calls,
        n_failed_reflections=refl.failed_calls,
        gate_trajectories=outcome.trajectories if outcome else (),
        usage=ctx.usage(step),
        timings=clock.laps,
        skill_tokens=ctx.count_tokens(state.skill),
        candidate_tokens=ctx.count_tokens(candidate.text),
        no_gate=not t.gate,
        leaks=leaks.new,
        refused=refused,
    )
    return commit(ctx, state, result)


@dataclass(frozen=True)
class LeakCheck:
    """The answer-leak check of one candidate: the lines copying train/val data that the skill
    in force did not have (``new``) and those it already had (``inherited``)."""

    new: tuple[Leak, ...] = ()
    inherited: tuple[Leak, ...] = ()

    def to_json(self, refused: str) -> dict[str, Any]:
        """``leaks.json`` of a step (or slow update) whose candidate had an edit applied."""
        return {
            "refused": bool(refused),
            "new": to_json(self.new),
            "inherited": to_json(self.inherited),
        }


def check_leaks(ctx: RunContext, state: TrainState, candidate: str) -> LeakCheck:
    """Leaks of ``candidate`` against the run's train and val items, the initial skill's own
    text exempt (``train/leaks.py``). No model call: linear in the skill's length."""
    index = ctx.leak_index
    found = index.find(candidate, exempt=state.initial_skill)
    new = new_leaks(found, index.find(state.skill, exempt=state.initial_skill))
    return LeakCheck(new, tuple(x for x in found if x not in new))


def leak_refusal(ctx: RunContext, step: int, leaks: tuple[Leak, ...]) -> str:
    """Flag a candidate's new leaks (a warning event); under ``train.reject_leaks`` return the
    reason it is refused before any target call, else ``""``."""
    if not leaks:
        return ""
    reject = ctx.cfg.train.reject_leaks
    n = len(leaks)
    what = f"{n} line{'s copy' if n != 1 else ' copies'} train/val data verbatim"
    action = "refused (train.reject_leaks)" if reject else "flagged (train.reject_leaks is off)"
    ctx.emit("warning", message=f"step {step}: candidate: {what}: {describe(leaks)}; {action}")
    if not reject:
        return ""
    return f"refused before evaluation: {what} ({describe(leaks, limit=1)})"


async def propose(
    ctx: RunContext, state: TrainState, step: int, k: int, clock: Stopwatch
) -> Proposal:
    """Rollout the batch, reflect on it, aggregate the edits and select the top k."""
    t = ctx.cfg.train
    batch = sample_batch(ctx.items["train"], t.seed, state.epoch, state.step_in_epoch, t.batch_size)
    with call_context("rollout", step):
        trajs = await ctx.rollout(batch, state.skill)
    clock.lap("rollout")
    with call_context("reflect", step):
        refl = await reflect(
            step,
            state.skill,
            trajs,
            ctx.optimizer,
            reflect_config(ctx),
            meta_memo=state.meta_memo if t.use_meta_skill else "",
            rejected=state.rejected_buffer,
            progress=ctx.progress,
        )
    agg = aggregate(refl.edits, t.merge_similarity, step=step)
    if t.semantic_merge:
        with call_context("aggregate", step):
            agg.edits, agg.semantic = await semantic_merge(
                agg.edits, ctx.optimizer, step=step, max_tokens=t.optimizer_max_tokens
            )
    with call_context("select", step):
        sel = await select(
            agg.edits,
            k,
            max_edit_tokens=t.max_edit_tokens,
            skill=state.skill,
            optimizer=ctx.optimizer if t.rank_with_optimizer else None,
            step=step,
            count=ctx.count_tokens,
            rejected=[e for r in state.rejected_buffer for e in r.edits],
            feedback=feedback_summary(trajs),
        )
    clock.lap("reflect")
    return Proposal(trajs, refl, agg, sel)


def write_step(
    ctx: RunContext,
    step: int,
    lr: float,
    k: int,
    p: Proposal,
    candidate: str,
    report: list[EditResult],
    outcome: GateOutcome | None,
    leaks: LeakCheck,
    refused: str,
) -> None:
    sel, agg = p.selection, p.aggregated
    files: dict[str, Any] = {
        "trajectories.jsonl": p.trajectories,
        "reflections.json": p.reflection.records,
        "aggregate.json": {
            "edits": agg.edits,
            "merges": agg.merges,
            "semantic_merge": agg.semantic,
            "conflicts": agg.conflicts,
        },
        "selection.json": {
            "lr": lr,
            "k": k,
            "selected": sel.selected,
            "dropped": sel.dropped,
            "ranking": sel.ranking,
        },
        "candidate.md": candidate,
        "apply_report.json": report,
        "gate.json": gate_json(outcome, refused),
        "leaks.json": leaks.to_json(refused),
    }
    if outcome is not None:
        files["attribution.json"] = attribution_json(outcome)
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


def gate_json(outcome: GateOutcome | None, refused: str = "") -> dict[str, Any]:
    """``gate.json`` of a step: the decision, the candidate's per-item scores (``items``, as
    before), the incumbent's, the items left out as missing, and the attribution. A candidate
    refused before the gate (``refused``) has no result, only the reason."""
    if outcome is None:
        return {"result": None, "reason": refused or "no edit applied: gate not run"}
    return {
        "result": outcome.result,
        "items": {i: s.value for i, s in outcome.candidate.items()},
        "incumbent_items": {i: s.value for i, s in outcome.incumbent.items()},
        "missing_items": sorted(i for i, s in outcome.candidate.items() if s.value is None)
        + sorted(i for i, s in outcome.incumbent.items() if s.value is None),
        "attribution": attribution_json(outcome),
    }


def attribution_json(outcome: GateOutcome) -> dict[str, Any]:
    """``attribution.json`` of a step: the val items the candidate flipped, with both scores."""
    r = outcome.result

    def scores(ids: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            {
                "item_id": i,
                "incumbent": outcome.incumbent[i].value,
                "candidate": outcome.candidate[i].value,
            }
            for i in ids
        ]

    return {
        "accepted": r.accepted,
        "evaluated": r.evaluated,
        "complete": not r.early_rejected,
        "fixed": scores(r.fixed),
        "broken": scores(r.broken),
        "mean_diff": r.mean_diff,
        "interval": [r.diff_low, r.diff_high],
        "confidence": r.confidence,
    }


def commit(ctx: RunContext, state: TrainState, out: StepOutcome) -> TrainState:
    """Advance the state, log accepted edits with provenance, checkpoint, emit ``step_end``."""
    t = ctx.cfg.train
    new = advance(state, out, patience=t.patience, buffer_size=t.rejected_buffer_size)
    record = new.history[-1]
    if record.accepted:
        ctx.run.append_patch_log(_patch_rows(state, out, new.global_step))
    ctx.run.checkpoint(new)
    ctx.emit("step_end", record=record.to_json(), skill=new.skill)  # events are JSON
    if record.skill_tokens > 2 * max(1, ctx.count_tokens(state.skill)) + 200:
        ctx.emit("warning", message=f"skill length jumped to {record.skill_tokens} tokens")
    return new


def _patch_rows(state: TrainState, out: StepOutcome, step: int) -> list[dict[str, Any]]:
    g = out.gate
    return [
        {
            "step": step,
            "epoch": state.epoch,
            "source": r.edit.source,
            "edit": to_json(r.edit),
            "match": r.reason,
            "gate_before": g.incumbent_score if g else None,
            "gate_after": g.candidate_score if g else None,
            "skill_version": step,
        }
        for r in out.applied
        if isinstance(r, EditResult) and r.status == "applied"
    ]


__all__ = [
    "LeakCheck",
    "attribution_json",
    "check_leaks",
    "commit",
    "evaluate_candidate",
    "gate_json",
    "gate_rule",
    "leak_refusal",
    "sample_batch",
    "training_step",
    "val_scores",
]
