"""Epoch boundary: the slow update (momentum) and the meta skill (the optimizer's memory).

Slow update: roll the previous epoch's final skill and the current skill out on the same train
items, categorise each item (improved / regressed / persistent_fail / stable_success), and let
the optimizer write longitudinal guidance into a protected block of the skill. Meta skill: the
optimizer revises a memo of which edits helped or hurt; reflection calls of the next epoch read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from skillgrad.models.base import ModelBackend
from skillgrad.models.structured import StructuredReply
from skillgrad.prompts import render_prompt
from skillgrad.runs.records import StepRecord
from skillgrad.train.optimizer_call import ask_optimizer
from skillgrad.train.reflect import render_trajectories
from skillgrad.train.schemas import MetaSkillOutput, SlowUpdateOutput
from skillgrad.types import Trajectory

CATEGORIES = ("improved", "regressed", "persistent_fail", "stable_success")
GUIDANCE_BLOCK = "slow_update"


def categorise(before: Trajectory, after: Trajectory) -> str:
    if after.score.value > before.score.value:
        return "improved"
    if after.score.value < before.score.value:
        return "regressed"
    return "stable_success" if after.score.passed else "persistent_fail"


def compare(
    before: Sequence[Trajectory], after: Sequence[Trajectory]
) -> tuple[dict[str, str], dict[str, int]]:
    items = {b.item_id: categorise(b, a) for b, a in zip(before, after, strict=True)}
    counts = Counter(items.values())
    return items, {c: counts.get(c, 0) for c in CATEGORIES}


async def slow_update_guidance(
    previous: str,
    current: str,
    before: Sequence[Trajectory],
    after: Sequence[Trajectory],
    optimizer: ModelBackend,
    *,
    max_tokens: int,
    seed: int,
    show_reference: bool = True,
) -> tuple[dict[str, str], dict[str, int], StructuredReply[SlowUpdateOutput]]:
    items, counts = compare(before, after)
    by_cat = {c: [a for a in after if items[a.item_id] == c][:4] for c in CATEGORIES}
    shown = {c: render_trajectories(by_cat[c], 200, show_reference) for c in CATEGORIES}
    reply = await ask_optimizer(
        optimizer,
        "slow_update",
        SlowUpdateOutput,
        max_tokens=max_tokens,
        seed=seed,
        previous=previous or "(empty document)",
        current=current or "(empty document)",
        n=len(after),
        categories=", ".join(f"{c}: {n}" for c, n in counts.items()),
        improved=shown["improved"],
        regressed=shown["regressed"],
        persistent=shown["persistent_fail"],
    )
    return items, counts, reply


def epoch_outcomes(history: Sequence[StepRecord], epoch: int) -> str:
    rows = []
    for rec in history:
        if rec.epoch != epoch:
            continue
        verdict = "ACCEPTED" if rec.accepted else "rejected"
        cand = rec.candidate_score
        row = render_prompt(
            "meta_skill_step_row",
            step=rec.step,
            kind=rec.kind,
            n_applied=rec.n_applied,
            verdict=verdict,
            incumbent=f"{rec.incumbent_score:.3f}",
            candidate="n/a" if cand is None else format(cand, ".3f"),
            reason=rec.gate_reason,
        )
        rows.append(row)
    return "\n".join(rows) or "(no steps)"


async def meta_skill_memo(
    previous: str,
    history: Sequence[StepRecord],
    patch_rows: Sequence[dict[str, Any]],
    epoch: int,
    optimizer: ModelBackend,
    *,
    max_tokens: int,
) -> tuple[dict[str, Any], StructuredReply[MetaSkillOutput]]:
    accepted = [
        render_prompt(
            "meta_skill_accepted_row",
            content=repr(r["edit"]["content"][:160]),
        )
        for r in patch_rows
        if r.get("epoch") == epoch
    ]
    outcomes = epoch_outcomes(history, epoch) + ("\n" + "\n".join(accepted) if accepted else "")
    inputs: dict[str, Any] = {"previous": previous, "epoch": epoch, "outcomes": outcomes}
    reply = await ask_optimizer(
        optimizer,
        "meta_skill",
        MetaSkillOutput,
        max_tokens=max_tokens,
        seed=epoch,
        previous=previous or "(none yet)",
        epoch=epoch,
        outcomes=outcomes,
    )
    return inputs, reply


__all__ = [
    "CATEGORIES",
    "GUIDANCE_BLOCK",
    "categorise",
    "compare",
    "meta_skill_memo",
    "slow_update_guidance",
]
