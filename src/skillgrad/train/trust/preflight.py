"""The preflight estimate printed before training: an upper bound on calls, tokens and cost.

Counts assume the worst case (every gate evaluates the whole selection split, each item
``samples_per_item`` times, and on every check target; every reflection is re-asked once); the
run's cache and the gate's early rejection make the real numbers lower. The power check (what
gain the gate can detect) is printed next to it once the baseline's per-item scores exist
(``train/trust/power.py``, event ``power_check``). Tokens are rough: skill + prompt lengths from the
target's tokenizer, completions at their ``max_tokens``."""

from __future__ import annotations

import math
from typing import Any

from skillgrad.models.wrappers.metering import PriceTable
from skillgrad.tasks.base import task_abilities
from skillgrad.train.context import CHECK_ROLE, RunContext
from skillgrad.train.explore import EARNED
from skillgrad.train.revisit import REDRAWS
from skillgrad.train.trust.noise import noise_calls
from skillgrad.types import Usage

# Above this the starting skill is almost surely the wrong file (skill documents are usually a
# few thousand tokens at most): the run still starts, with a warning that states the cost.
LARGE_SKILL_TOKENS = 20_000


def estimate(ctx: RunContext, skill: str, prices: PriceTable) -> dict[str, Any]:
    t, items = ctx.cfg.train, ctx.items
    steps = t.num_epochs * ctx.steps_per_epoch
    n_val, n_test, batch = len(items["val"]), len(items["test"]), t.batch_size
    n_val *= t.samples_per_item  # every val item is sampled samples_per_item times
    slow_epochs = max(0, t.num_epochs - 1) if t.use_slow_update else 0
    abilities = task_abilities(ctx.task)
    target_calls = abilities.turns * (  # a multi-turn rollout calls the target once per turn
        n_val  # baseline
        + steps * (batch + n_val)  # rollout + gate of the candidate
        + slow_epochs * (2 * min(t.slow_update_samples, len(items["train"])) + n_val)
        + 2 * n_test  # final test: initial and best skill
        + trust_calls(ctx, steps)
        + steps * explore_calls(ctx)
    ) + steps * explore_calls(ctx) * explore_redraws(ctx)
    # per check target: the incumbent once (later incumbents were scored as candidates), each
    # gated candidate, the final test
    check_calls = abilities.turns * (n_val * (1 + steps + slow_epochs) + 2 * n_test)
    reflections = math.ceil(batch / t.minibatch_size) + 1 + int(t.rank_with_optimizer)
    # the step's one contrast call (train/contrast.py)
    reflections += t.explore == "on" and t.contrast == "on"
    if t.semantic_merge:  # at most one call per (op, section) cluster of two or more edits
        reflections += reflections * t.max_edits_per_reflection // 2
    optimizer_calls = 2 * (
        steps * reflections + slow_epochs + (t.num_epochs if t.use_meta_skill else 0)
    )
    skill_now = ctx.count_tokens(skill)
    skill_tokens = skill_now + t.max_edit_tokens * 2
    target_out = abilities.max_tokens
    target_usage = Usage((skill_tokens + 80) * target_calls, target_out * target_calls)
    opt_prompt = 600 + skill_tokens + t.minibatch_size * 150
    opt_usage = Usage(opt_prompt * optimizer_calls, t.optimizer_max_tokens * optimizer_calls)
    names = ctx.model_names
    out: dict[str, Any] = {
        "steps": steps,
        "calls": {"optimizer": optimizer_calls, "target": target_calls},
        "tokens": {"optimizer": opt_usage.total_tokens, "target": target_usage.total_tokens},
        "cost_usd": {
            "optimizer": round(prices.cost(names[0], opt_usage), 4),
            "target": round(prices.cost(names[1], target_usage), 4),
        },
        "priced": {"optimizer": prices.is_priced(names[0]), "target": prices.is_priced(names[1])},
    }
    if ctx.check_targets:  # each check target answers the same prompts as the target
        n = len(ctx.check_targets)
        per = Usage((skill_tokens + 80) * check_calls, target_out * check_calls)
        out["calls"][CHECK_ROLE] = n * check_calls
        out["tokens"][CHECK_ROLE] = n * per.total_tokens
        cost = sum(prices.cost(c.name, per) for c in ctx.check_targets)
        out["cost_usd"][CHECK_ROLE] = round(cost, 4)
        out["priced"][CHECK_ROLE] = all(prices.is_priced(c.name) for c in ctx.check_targets)
    all_calls = sum(out["calls"].values())
    all_tokens = sum(out["tokens"].values())
    return {
        **out,
        "skill_tokens": skill_now,
        "skill_share_of_tokens": round((skill_now * all_calls) / max(1, all_tokens), 3),
    }


def trust_calls(ctx: RunContext, steps: int) -> int:
    """Target calls of the trust checks (``docs/gate.md``): fresh A/A repeats of the val items,
    the incumbent re-measured at every gate, the two control arms on the test split."""
    t, n_val, n_test = ctx.cfg.train, len(ctx.items["val"]), len(ctx.items["test"])
    fresh = t.noise_repeats >= 2 and noise_calls(ctx.cfg) == "fresh"
    return (
        (t.noise_repeats - 1) * n_val * fresh
        + steps * n_val * t.noise_remeasure
        + 2 * n_test * t.controls
    )


def _resumes(ctx: RunContext) -> bool:
    """``train.explore_resume`` can act: it is on and the task's rollouts take turns (an
    episode has a score that rises and commands that lose points; a one-call reply has
    neither, so nothing is resumed or drawn again)."""
    return ctx.cfg.train.explore_resume == "on" and task_abilities(ctx.task).turns > 1


def explore_calls(ctx: RunContext) -> int:
    """Target rollouts of one step's exploration (``train.explore``): at worst every batch item
    fails and every attempt is made, those earned by progress too (``train.explore_resume``)."""
    t = ctx.cfg.train
    earned = EARNED if _resumes(ctx) else 1
    return t.batch_size * t.explore_attempts * earned if t.explore == "on" else 0


def explore_redraws(ctx: RunContext) -> int:
    """Target calls an exploration rollout can add past its turns: with
    ``train.explore_resume``, replies drawn again past a command known to lose points."""
    return REDRAWS if _resumes(ctx) else 0


def large_skill_warning(skill: str, estimate: dict[str, Any]) -> str | None:
    """The warning for a starting skill above ``LARGE_SKILL_TOKENS``, with what it costs: its
    share of the estimated tokens and of the run directory (a copy per version and per step's
    candidate and trajectories). None below the threshold."""
    tokens, steps = int(estimate["skill_tokens"]), int(estimate["steps"])
    if tokens <= LARGE_SKILL_TOKENS:
        return None
    size = len(skill.encode("utf-8"))
    copies = 2 * steps + 3  # skills/skill_vNNNN + steps/*/candidate.md per step, best, initial
    return (
        f"the starting skill (train.init_skill) is {tokens:,} tokens ({size / 1e6:.1f} MB); "
        f"skill documents are usually a few thousand tokens. Every target and optimizer call "
        f"carries it: {estimate['skill_share_of_tokens']:.0%} of the estimated "
        f"{sum(estimate['tokens'].values()):,} tokens, and the run directory keeps a copy per "
        f"version and step (~{size * copies / 1e6:.0f} MB or more over {steps} steps). Check "
        "that init_skill names the right file, or set budget.max_cost_usd / max_calls first."
    )


__all__ = [
    "LARGE_SKILL_TOKENS",
    "estimate",
    "explore_calls",
    "explore_redraws",
    "large_skill_warning",
    "trust_calls",
]
