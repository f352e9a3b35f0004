"""Check targets (``train.check_targets``): the gate refuses a candidate that loses more than
``train.check_targets_tolerance`` on any other target model, however much it wins on the main one.

Order, so that a refused candidate costs as few calls as it can: the main gate first, with its
lossless early rejection; only a candidate it accepts goes to the check targets, one after
another in the configured order, each compared with the incumbent on that same target (val mean
over the items both were scored on) with the same lossless early rejection; the first refusal
ends the check (the targets after it are ``not evaluated``). At the end of the run each check
target's initial vs best test score is reported (``test_scores``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.train.context import RunContext
from skillgrad.train.gate import GateOutcome
from skillgrad.train.rollout import mean_score, rollout
from skillgrad.train.validate import evaluate_candidate
from skillgrad.types import CheckResult


async def gate_candidate(
    ctx: RunContext, step: int, candidate: str, incumbent: str, stage: str = "gate"
) -> tuple[GateOutcome, tuple[CheckResult, ...]]:
    """The main gate, then (only if it accepts) the check targets; the outcome is refused when
    a check target refuses the candidate."""
    outcome = await evaluate_candidate(ctx, step, candidate, incumbent, stage)
    if not ctx.check_targets or not outcome.result.accepted:
        return outcome, ()
    checks = await check_candidate(ctx, step, candidate, incumbent)
    return with_checks(outcome, checks), checks


async def check_candidate(
    ctx: RunContext, step: int, candidate: str, incumbent: str
) -> tuple[CheckResult, ...]:
    """The candidate on every check target in order, until one refuses it."""
    results: list[CheckResult] = []
    refused = ""
    for target in ctx.check_targets:
        if refused:
            why = f"not evaluated: already refused on {refused}"
            results.append(CheckResult(target.name, "not evaluated", reason=why))
            continue
        outcome = await evaluate_candidate(ctx, step, candidate, incumbent, target=target)
        t = ctx.cfg.train
        check = check_result(target.name, outcome, t.check_targets_tolerance, decided=t.gate)
        refused = target.name if check.verdict == "refused" else ""
        results.append(check)
    return tuple(results)


def check_result(
    target: str, outcome: GateOutcome, tolerance: float, decided: bool = True
) -> CheckResult:
    """One check target's record from its gate outcome (rule ``tolerance``); ``decided``
    False under --no-gate (evaluated in full, never refused)."""
    r = outcome.result
    diff = r.mean_diff
    shown = "n/a" if diff is None else f"{diff:+.3f}"
    if not decided:
        reason = f"not decided (--no-gate) on {target}: mean difference {shown}"
    elif r.accepted:
        reason = f"passes on {target}: mean difference {shown} (tolerance {tolerance:g})"
    elif r.early_rejected or diff is None:
        reason = (
            f"refused: loses more than {tolerance:g} on {target} "
            f"(stopped after {r.evaluated}/{r.total} items)"
        )
    else:
        reason = f"refused: loses {-diff:.3f} on {target}"
    return CheckResult(
        target=target,
        verdict="passed" if r.accepted else "refused",
        incumbent_score=r.incumbent_score,
        candidate_score=r.candidate_score,
        mean_diff=diff,
        evaluated=r.evaluated,
        total=r.total,
        early_rejected=r.early_rejected,
        missing=r.missing,
        reason=reason,
    )


def with_checks(outcome: GateOutcome, checks: tuple[CheckResult, ...]) -> GateOutcome:
    """The main gate's outcome, refused (with the check's reason) if a check target refused."""
    refusal = refusal_of(checks)
    if refusal is None:
        return outcome
    reason = f"{refusal.reason} (main target: {outcome.result.reason})"
    return replace(outcome, result=replace(outcome.result, accepted=False, reason=reason))


def refusal_of(checks: tuple[CheckResult, ...]) -> CheckResult | None:
    """The check target that refused the candidate, if one did."""
    return next((c for c in checks if c.verdict == "refused"), None)


async def test_scores(ctx: RunContext, step: int, initial: str, best: str) -> list[dict[str, Any]]:
    """Each check target's mean test score of the initial and the best skill (cached per
    target, skill and item like every score), for ``summary.json`` and the report."""
    out = []
    with call_context("test", step):
        for target in ctx.check_targets:
            scores = {}
            for name, skill in (("initial", initial), ("best", best)):
                trajs = await rollout(
                    ctx.task,
                    ctx.items["test"],
                    skill,
                    target.backend,
                    workers=ctx.cfg.hardware.rollout_workers,
                    store=target.results,
                    progress=ctx.progress,
                    stage=f"test {target.name} ({name})",
                    seed=ctx.cfg.train.seed,
                )
                scores[name] = mean_score(trajs)
            out.append(
                {
                    "target": target.name,
                    "test_initial": scores["initial"],
                    "test_best": scores["best"],
                    "test_change": scores["best"] - scores["initial"],
                }
            )
    return out


__all__ = [
    "check_candidate",
    "check_result",
    "gate_candidate",
    "refusal_of",
    "test_scores",
    "with_checks",
]
