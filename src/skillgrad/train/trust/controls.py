"""Control arms on the test split (``train.controls``; ``skillgrad sweep --controls``): the
empty skill and a placebo skill (``train/trust/placebo.py``: as many target tokens as the best
skill, no task content) scored on the same test items as the initial and the best skill.

A gain over the initial skill that the placebo also shows came from a system prompt of that
length, not from what the skill says; a best skill below the empty one hurts the target. The
per-item scores come from the run's result cache, so every arm is compared item by item on
exactly the items the others were scored on (missing items left out of that pair).
"""

from __future__ import annotations

import math
from typing import Any

from skillgrad.models.context import call_context
from skillgrad.skill.package import prompt_text
from skillgrad.train.context import RunContext
from skillgrad.train.rollout import cached_item_scores
from skillgrad.train.trust.placebo import placebo_skill


def _per_item(ctx: RunContext, skill: str) -> dict[str, float]:
    scores = cached_item_scores(ctx.store, ctx.items["test"], skill, 1)
    return {s.item_id: s.value for s in scores if s.value is not None}


def _gain(best: dict[str, float], arm: dict[str, float]) -> float | None:
    """Mean per-item difference best minus arm on the items both were scored on."""
    both = [i for i in best if i in arm]
    return math.fsum(best[i] - arm[i] for i in both) / len(both) if both else None


async def control_arms(ctx: RunContext, initial: str, best: str, step: int) -> dict[str, Any]:
    """Score the empty and the placebo skill on the test split (cached like every rollout) and
    compare the best skill with each arm item by item: ``summary.json``'s ``controls``."""
    placebo = placebo_skill(ctx.count_tokens(prompt_text(best)), ctx.count_tokens)
    arms = {"empty": "", "placebo": placebo}
    with call_context("test", step):
        for name, skill in arms.items():
            await ctx.rollout(ctx.items["test"], skill, f"test ({name} control)")
    scores = {name: _per_item(ctx, skill) for name, skill in arms.items()}
    b, i = _per_item(ctx, best), _per_item(ctx, initial)

    def mean(xs: dict[str, float]) -> float | None:
        return math.fsum(xs.values()) / len(xs) if xs else None

    return {
        "items": len(ctx.items["test"]),
        "placebo_tokens": ctx.count_tokens(placebo),
        "best_tokens": ctx.count_tokens(prompt_text(best)),
        "test_empty": mean(scores["empty"]),
        "test_placebo": mean(scores["placebo"]),
        "test_gain_vs_initial": _gain(b, i),
        "test_gain_vs_empty": _gain(b, scores["empty"]),
        "test_gain_vs_placebo": _gain(b, scores["placebo"]),
        "worse_than_initial": sorted(x for x in b if x in i and b[x] < i[x]),
        "worse_than_empty": sorted(
            x for x in b if x in scores["empty"] and b[x] < scores["empty"][x]
        ),
        "worse_than_placebo": sorted(
            x for x in b if x in scores["placebo"] and b[x] < scores["placebo"][x]
        ),
    }


__all__ = ["control_arms"]
