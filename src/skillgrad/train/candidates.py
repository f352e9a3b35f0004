"""A step's candidates (``train.candidates_per_step: K``): K independent proposals from the same
trajectories, each gated against the incumbent; the best accepted one is kept.

Each candidate is one pass of reflect -> aggregate -> select -> update on the step's
trajectories. With K = 1 that is the step of method.md (reflection at the optimizer's own
temperature, seeded with the step); with K > 1 each reflection samples at
``train.candidate_temperature`` with its own seed. A candidate identical to an earlier one is
not gated again. Every other candidate with an applied edit goes through the leak check and the
main gate (lossless early rejection included). Those the main gate accepts go to the check
targets (``train/check_targets.py``) best val mean first (ties: lower k) until one passes them
all: that one is kept — the highest val mean among the candidates that pass everything — and
the lower ones are not checked.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.skill import Skill
from skillgrad.train.aggregate import Aggregated, aggregate
from skillgrad.train.check_targets import check_candidate, not_checked, refusal_of, with_checks
from skillgrad.train.context import RunContext
from skillgrad.train.evaluate import attribution_json, evaluate_candidate, gate_json
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
from skillgrad.train.state import TrainState, rejected_entry
from skillgrad.types import CandidateRecord, CheckResult, EditResult, RejectedEdit, Trajectory


@dataclass
class Proposal:
    """What reflect -> aggregate -> select produced for one candidate."""

    reflection: ReflectResult
    aggregated: Aggregated
    selection: Selection


@dataclass
class Candidate:
    """One candidate skill of a step and everything decided about it."""

    k: int
    seed: int
    proposal: Proposal
    text: str
    report: list[EditResult]
    duplicate_of: int | None = None
    leaks: LeakCheck = field(default_factory=LeakCheck)
    refused: str = ""
    outcome: GateOutcome | None = None
    checks: tuple[CheckResult, ...] = ()

    @property
    def applied(self) -> bool:
        return any(r.status == "applied" for r in self.report)

    @property
    def accepted(self) -> bool:
        return self.outcome is not None and self.outcome.result.accepted

    @property
    def not_gated(self) -> str:
        """Why a candidate without a gate outcome has none (``gate.json``'s reason)."""
        if self.duplicate_of is not None:
            return f"duplicate of candidate k{self.duplicate_of}: not gated again"
        return "" if self.applied else "no edit applied: gate not run"

    def files(self, lr: float, k: int) -> dict[str, Any]:
        """The step-directory files of this candidate (``write_step`` and ``candidates/k<k>``)."""
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


def candidate_seed(train_seed: int, step: int, k: int) -> int:
    """The reflection seed of candidate ``k`` of ``step`` when K > 1: a stable 31-bit hash."""
    digest = hashlib.sha256(f"skillgrad-candidate:{train_seed}:{step}:{k}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def reflect_config(ctx: RunContext, state: TrainState, seed: int | None = None) -> ReflectConfig:
    """The reflection settings; ``seed`` given (K > 1): at ``train.candidate_temperature``."""
    t = ctx.cfg.train
    temperature = ctx.cfg.models.optimizer.temperature if seed is None else t.candidate_temperature
    return ReflectConfig(
        minibatch_size=t.minibatch_size,
        max_edits=t.max_edits_per_reflection,
        failure_only=t.failure_only,
        deep_threshold=t.deep_reflect_threshold,
        workers=ctx.cfg.hardware.analyst_workers,
        max_tokens=t.optimizer_max_tokens,
        temperature=temperature,
        seed=seed,
        reask_temperature=t.candidate_temperature,
        copies=rule_copies(ctx, state),
    )


async def propose_candidates(
    ctx: RunContext, state: TrainState, step: int, k: int, trajs: list[Trajectory]
) -> list[Candidate]:
    """``train.candidates_per_step`` candidates from the same trajectories, each with at most
    ``k`` edits applied to a copy of the skill in force (update)."""
    n = ctx.cfg.train.candidates_per_step
    out: list[Candidate] = []
    for i in range(1, n + 1):
        seed = candidate_seed(ctx.cfg.train.seed, step, i) if n > 1 else None
        if n > 1:
            ctx.emit("candidate_start", step=step, k=i, seed=seed)
        proposal = await propose(ctx, state, step, k, trajs, reflect_config(ctx, state, seed))
        skill, report = Skill(state.skill).apply(proposal.selection.selected)
        same = next((c.k for c in out if c.applied and c.text == skill.text), None)
        used = step if seed is None else seed
        out.append(Candidate(i, used, proposal, skill.text, report, duplicate_of=same))
    return out


async def propose(
    ctx: RunContext,
    state: TrainState,
    step: int,
    k: int,
    trajs: list[Trajectory],
    cfg: ReflectConfig,
) -> Proposal:
    """Reflect on the trajectories, aggregate the edits and select the top k."""
    t = ctx.cfg.train
    with call_context("reflect", step):
        refl = await reflect(
            step,
            state.skill,
            trajs,
            ctx.optimizer,
            cfg,
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
    return Proposal(refl, agg, sel)


async def gate_candidates(
    ctx: RunContext, state: TrainState, step: int, cands: list[Candidate]
) -> None:
    """Leak check and main gate of every distinct candidate with an applied edit (in k
    order), then the check targets, best val mean first, until one passes them all."""
    several = len(cands) > 1
    for c in cands:
        if not c.applied or c.duplicate_of is not None:
            continue
        c.leaks = check_leaks(ctx, state, c.text)
        c.refused = leak_refusal(ctx, step, c.leaks.new, f"k{c.k}" if several else "")
        if not c.refused:
            c.outcome = await evaluate_candidate(ctx, step, c.text, state.skill)
    if not ctx.check_targets:
        return
    kept: Candidate | None = None
    for c in by_val_mean(cands):
        if kept is not None:
            why = f"not evaluated: candidate k{kept.k} has a higher val mean and passed"
            c.checks = not_checked(ctx, why)
            continue
        c.checks = await check_candidate(ctx, step, c.text, state.skill)
        if c.outcome is not None:  # always: only gated candidates can be accepted
            c.outcome = with_checks(c.outcome, c.checks)
        kept = c if c.accepted else None


def by_val_mean(cands: list[Candidate]) -> list[Candidate]:
    """The accepted candidates, highest val mean first (ties: lower k first)."""

    def rank(c: Candidate) -> tuple[float, int]:
        return (-c.outcome.result.candidate_score if c.outcome else 0.0, c.k)

    return sorted((c for c in cands if c.accepted), key=rank)


def kept_candidate(cands: list[Candidate]) -> Candidate | None:
    """The candidate that becomes the skill in force: the best accepted one, if any."""
    ranked = by_val_mean(cands)
    return ranked[0] if ranked else None


def representative(cands: list[Candidate]) -> Candidate:
    """The candidate the step record describes: the kept one, else the first gated, else the
    first refused before the gate, else the first with an applied edit, else the first."""
    kept = kept_candidate(cands)
    if kept is not None:
        return kept
    for test in (lambda c: c.outcome is not None, lambda c: bool(c.refused), lambda c: c.applied):
        found = next((c for c in cands if test(c)), None)
        if found is not None:
            return found
    return cands[0]


def verdict(c: Candidate, kept: Candidate | None) -> str:
    """How one candidate ended, in words (``CandidateRecord.verdict``)."""
    if c is kept:
        return "kept"
    if c.duplicate_of is not None:
        return f"duplicate of k{c.duplicate_of}"
    if not c.applied:
        return "no edit applied"
    if c.refused:
        return "refused (leak)"
    refusal = refusal_of(c.checks)
    if refusal is not None:
        return refusal.reason
    if c.outcome is None:
        return "not evaluated"
    r = c.outcome.result
    if r.accepted:
        return "accepted (not kept: a higher val mean was kept)"
    return "early-rejected" if r.early_rejected else "rejected"


def records(cands: list[Candidate], kept: Candidate | None) -> tuple[CandidateRecord, ...]:
    """Every candidate's record for the step record (only when K > 1)."""
    if len(cands) < 2:
        return ()
    out = []
    for c in cands:
        r = c.outcome.result if c.outcome else None
        out.append(
            CandidateRecord(
                k=c.k,
                seed=c.seed,
                verdict=verdict(c, kept),
                kept=c is kept,
                n_applied=sum(x.status == "applied" for x in c.report),
                candidate_score=r.candidate_score if r else None,
                incumbent_score=r.incumbent_score if r else None,
                gate_evaluated=r.evaluated if r else 0,
                duplicate_of=c.duplicate_of,
                reason=r.reason if r else (c.refused or c.not_gated),
            )
        )
    return tuple(out)


def rejected_others(
    state: TrainState, step: int, cands: list[Candidate], shown: Candidate
) -> tuple[RejectedEdit, ...]:
    """The rejected-edit buffer entries of the candidates other than ``shown`` (whose entry
    ``state.advance`` makes), in k order; duplicates add nothing."""
    out = []
    for c in cands:
        if c is shown or c.duplicate_of is not None:
            continue
        gate = c.outcome.result if c.outcome else None
        entry = rejected_entry(
            step, gate, tuple(c.report), c.refused, c.checks, state.current_score
        )
        if entry is not None:
            out.append(entry)
    return tuple(out)


__all__ = [
    "Candidate",
    "Proposal",
    "by_val_mean",
    "candidate_seed",
    "gate_candidates",
    "kept_candidate",
    "propose",
    "propose_candidates",
    "records",
    "reflect_config",
    "rejected_others",
    "representative",
]
