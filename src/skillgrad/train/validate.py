"""Skills on the selection split (val): per-item scores, and one candidate gated against the
incumbent — on the main target under ``train.gate_rule``, or on a check target under the
``tolerance`` rule (``train/check_targets.py`` decides what a check target's verdict means).

Each target reads and writes its own entries of the result cache (a check target through its
``TargetResults`` view), so a skill is scored once per (target, item, sample). Also the JSON a
step directory keeps of a gated candidate (``gate.json``, ``attribution.json``).
"""

from __future__ import annotations

from typing import Any

from skillgrad.config import TrainConfig
from skillgrad.models.base import ModelBackend
from skillgrad.models.context import call_context
from skillgrad.runs.cache import ResultStore
from skillgrad.runs.records import CheckResult
from skillgrad.train.context import CheckTarget, RunContext
from skillgrad.train.gate import GateOutcome, GateRule, gate
from skillgrad.train.rollout import ItemScore, score_items
from skillgrad.train.trust.noise import remeasured_incumbent
from skillgrad.types import to_json

CHECK_STAGE = "check"
"""The ledger stage of a check target's gate calls (its role is ``context.CHECK_ROLE``)."""


def gate_rule(ctx: RunContext) -> GateRule:
    """The run's gate rule (``configured_gate_rule``) with the noise it measured."""
    return configured_gate_rule(ctx.cfg.train, ctx.noise_threshold)


def configured_gate_rule(t: TrainConfig, noise_threshold: float) -> GateRule:
    """The gate rule of ``train.gate_rule``, ``gate_confidence`` and ``gate_min_delta`` (training's
    gate, ``eval --headroom``); the measured noise floor raises the margin: a mean difference at
    or below ``noise_threshold`` is refused (``train/trust/noise.py``; raising ``min_delta``
    keeps early rejection lossless)."""
    return GateRule(t.gate_rule, t.gate_confidence, max(t.gate_min_delta, noise_threshold))


def check_rule(ctx: RunContext) -> GateRule:
    """A check target's rule: the candidate may lose at most ``check_targets_tolerance`` (the
    val mean, ``check_targets_rule: strict``), or no loss beyond it that the items establish at
    ``gate_confidence`` (``paired``)."""
    t = ctx.cfg.train
    if t.check_targets_rule == "paired":
        return GateRule("tolerance_paired", t.gate_confidence, -t.check_targets_tolerance)
    return GateRule("tolerance", t.gate_confidence, -t.check_targets_tolerance)


def sample_temperature(ctx: RunContext) -> float | None:
    """Temperature of repeated val samples (``samples_per_item > 1``): the target's."""
    return ctx.cfg.models.target.temperature if ctx.cfg.train.samples_per_item > 1 else None


def on_target(
    ctx: RunContext, target: CheckTarget | None
) -> tuple[ModelBackend, ResultStore, float | None]:
    """Backend, result store and repeated-sample temperature of the main or a check target."""
    if target is None:
        return ctx.target, ctx.store, sample_temperature(ctx)
    repeated = ctx.cfg.train.samples_per_item > 1
    return target.backend, target.results, target.temperature if repeated else None


async def val_scores(
    ctx: RunContext, skill: str, stage: str, target: CheckTarget | None = None
) -> list[ItemScore]:
    """``skill`` on every val item, ``train.samples_per_item`` samples each (cached), on the
    main target or on ``target``."""
    t = ctx.cfg.train
    backend, store, temperature = on_target(ctx, target)
    return await score_items(
        ctx.task,
        ctx.items["val"],
        skill,
        backend,
        samples=t.samples_per_item,
        workers=ctx.cfg.hardware.rollout_workers,
        store=store,
        progress=ctx.progress,
        stage=stage,
        seed=t.seed,
        temperature=temperature,
    )


async def evaluate_candidate(
    ctx: RunContext,
    step: int,
    candidate: str,
    incumbent: str,
    stage: str = "gate",
    target: CheckTarget | None = None,
) -> GateOutcome:
    """Gate a candidate against the incumbent skill on the selection split, item by item (full
    evaluation, no decision, under --no-gate). The incumbent's per-item scores come from the
    result cache (it was scored in full when it became the incumbent; on a check target, the
    first time a candidate reaches it). ``target``: a check target (ledger stage
    ``CHECK_STAGE``, rule ``check_rule``) instead of the main target."""
    t = ctx.cfg.train
    use_gate = t.gate
    backend, store, temperature = on_target(ctx, target)
    label = stage if target is None else f"{CHECK_STAGE} {target.name}"
    with call_context(stage if target is None else CHECK_STAGE, step):
        inc = await val_scores(ctx, incumbent, f"{label} (incumbent)", target)
        if target is None and t.noise_remeasure and use_gate:
            inc = await remeasured_incumbent(ctx, incumbent, step, inc)
        return await gate(
            ctx.task,
            ctx.items["val"],
            candidate,
            {s.item_id: s for s in inc},
            backend,
            rule=gate_rule(ctx) if target is None else check_rule(ctx),
            workers=ctx.cfg.hardware.rollout_workers,
            samples=t.samples_per_item,
            seed=t.seed,
            temperature=temperature,
            store=store,
            progress=ctx.progress,
            early_stop=use_gate,
            require_improvement=use_gate,
            stage=label,
        )


def gate_json(
    outcome: GateOutcome | None, refused: str = "", checks: tuple[CheckResult, ...] = ()
) -> dict[str, Any]:
    """``gate.json`` of a step: the decision, the candidate's per-item scores (``items``, as
    before), the incumbent's, the items left out as missing, the attribution, and the check
    targets' records (when it reached them). A candidate refused before the gate (``refused``)
    has no result, only the reason."""
    if outcome is None:
        return {"result": None, "reason": refused or "no edit applied: gate not run"}
    data = {
        "result": outcome.result,
        "items": {i: s.value for i, s in outcome.candidate.items()},
        "incumbent_items": {i: s.value for i, s in outcome.incumbent.items()},
        "missing_items": sorted(i for i, s in outcome.candidate.items() if s.value is None)
        + sorted(i for i, s in outcome.incumbent.items() if s.value is None),
        "attribution": attribution_json(outcome),
    }
    if checks:
        data["check_targets"] = to_json(checks)
    return data


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


__all__ = [
    "CHECK_STAGE",
    "attribution_json",
    "check_rule",
    "configured_gate_rule",
    "evaluate_candidate",
    "gate_json",
    "gate_rule",
    "on_target",
    "sample_temperature",
    "val_scores",
]
