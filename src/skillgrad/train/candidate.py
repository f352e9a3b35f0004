"""A step's candidate: one proposal from the step's trajectories (reflect -> aggregate ->
select -> update), then the leak check, the main gate (lossless early rejection included) and
the check targets (``train/check_targets.py``).

Several independent candidates per step were tried in round 3 (K = 3 sampled reflections, the
best accepted one kept) and did not beat one (docs/benchmarks.md, "Several candidates per
step"), so a step has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.skill.document import Skill
from skillgrad.train.aggregate import Aggregated, aggregate
from skillgrad.train.check_targets import gate_candidate
from skillgrad.train.context import RunContext
from skillgrad.train.gate import GateOutcome
from skillgrad.train.leak_check import (
    LeakCheck,
    check_leaks,
    drop_copies,
    leak_refusal,
    rule_copies,
)
from skillgrad.train.merge import semantic_merge
from skillgrad.train.reflect import ReflectConfig, ReflectResult, feedback_summary, reflect
from skillgrad.train.select import Selection, select
from skillgrad.train.state import TrainState
from skillgrad.train.validate import attribution_json, gate_json
from skillgrad.types import CheckResult, EditResult, Trajectory


@dataclass
class Proposal:
    """What reflect -> aggregate -> select produced for one candidate."""

    reflection: ReflectResult
    aggregated: Aggregated
    selection: Selection


@dataclass
class Candidate:
    """The candidate skill of a step and everything decided about it."""

    proposal: Proposal
    text: str
    report: list[EditResult]
    leaks: LeakCheck = field(default_factory=LeakCheck)
    refused: str = ""
    outcome: GateOutcome | None = None
    checks: tuple[CheckResult, ...] = ()

    @property
    def applied(self) -> bool:
        return any(r.status == "applied" for r in self.report)

    @property
    def not_gated(self) -> str:
        """Why a candidate without a gate outcome has none (``gate.json``'s reason)."""
        return "" if self.applied else "no edit applied: gate not run"

    def files(self, lr: float, k: int) -> dict[str, Any]:
        """The step-directory files of the candidate (``step.write_step``)."""
        p, out = self.proposal, self.outcome
        sel, agg = p.selection, p.aggregated
        files: dict[str, Any] = {
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
            "candidate.md": self.text,
            "apply_report.json": self.report,
            "gate.json": gate_json(out, self.refused or self.not_gated, self.checks),
            "leaks.json": self.leaks.to_json(self.refused),
        }
        if out is not None:
            files["attribution.json"] = attribution_json(out)
        return files


def _reflect_config(ctx: RunContext, state: TrainState) -> ReflectConfig:
    """The reflection settings: the optimizer's own temperature, seeded with the step; the one
    re-ask at ``train.reask_temperature``."""
    t = ctx.cfg.train
    return ReflectConfig(
        minibatch_size=t.minibatch_size,
        max_edits=t.max_edits_per_reflection,
        failure_only=t.failure_only,
        deep_threshold=t.deep_reflect_threshold,
        workers=ctx.cfg.hardware.analyst_workers,
        max_tokens=t.optimizer_max_tokens,
        temperature=ctx.cfg.models.optimizer.temperature,
        reask_temperature=t.reask_temperature,
        copies=rule_copies(ctx, state),
    )


async def propose_candidate(
    ctx: RunContext, state: TrainState, step: int, k: int, trajs: list[Trajectory]
) -> Candidate:
    """Reflect on the step's trajectories, aggregate the edits, select the top ``k`` and apply
    them to a copy of the skill in force (update)."""
    t = ctx.cfg.train
    with call_context("reflect", step):
        refl = await reflect(
            step,
            state.skill,
            trajs,
            ctx.optimizer,
            _reflect_config(ctx, state),
            meta_memo=state.meta_memo if t.use_meta_skill else "",
            rejected=state.rejected_buffer,
            progress=ctx.progress,
        )
    agg = aggregate(drop_copies(ctx, state, step, refl.edits), t.merge_similarity, step=step)
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
    skill, report = Skill(state.skill).apply(sel.selected)
    return Candidate(Proposal(refl, agg, sel), skill.text, report)


async def judge_candidate(ctx: RunContext, state: TrainState, step: int, c: Candidate) -> None:
    """Leak check of a candidate with an applied edit, then (unless refused for a leak) the
    main gate and the check targets (``check_targets.gate_candidate``)."""
    if not c.applied:
        return
    c.leaks = check_leaks(ctx, state, c.text)
    c.refused = leak_refusal(ctx, step, c.leaks.new)
    if not c.refused:
        c.outcome, c.checks = await gate_candidate(ctx, step, c.text, state.skill)


__all__ = [
    "Candidate",
    "Proposal",
    "judge_candidate",
    "propose_candidate",
]
