"""Contrast: rules written from the difference between a failed and a passing attempt.

For each train item the step's batch failed and exploration solved (``train/explore.py``), the
optimizer reads the nearest failure (``Exploration.pairs``: the attempt the passing retry
corrected, else the batch's failed trajectory) and the passing attempt side by side, each
through its kind's own view (``reflect.render_trajectories``), and is asked for the rule that
makes the difference, stated for the kind of task, not the item (``prompts/contrast_*.md``).
What to compare is the kind's (``TrajectoryView.contrast_prompt``): a reply's form and content
(``contrast_replies.md``), or an episode's procedure in words, in the order it is followed, each
object named by its role and no step number (``contrast_episodes.md``). Measured by re-asking
the 18 recorded first contrast calls of five gold-off environment sweeps
(``bench/bench_contrast_rules.py``): asked where the two attempts differ ("which step, which
action"), the 1.5B wrote 33 rules, 7 naming a step ("If the target fails to take the banana in
step 3, they should take the banana in step 3."), 5 reciting its instructions and 29 about "the
target"; with the episode prompt, 31 rules, none naming a step or reciting, 1 about the target
(the most frequent: "Read the instructions book first.").
One call per step holds up to ``train.minibatch_size`` pairs (the system prompt and the skill
are read once: the cheaper of one call per pair and one call for all). The reply has the
reflection's schema; its rules become edits with source ``contrast`` that join the step's
reflection edits before aggregation, so they are screened, selected and gated like every rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillgrad.models.context import call_context
from skillgrad.prompts import render_prompt
from skillgrad.skill.package import is_package_text
from skillgrad.tasks.views import view_of
from skillgrad.train.context import RunContext
from skillgrad.train.explore import Attempt
from skillgrad.train.optimizer_call import ask_optimizer
from skillgrad.train.reflect import (
    EMPTY_SKILL,
    ReflectResult,
    render_rejected,
    render_trajectories,
    reply_check,
    trajectory_id,
)
from skillgrad.train.rules import rule_edits, skill_choices
from skillgrad.train.schemas import reflection_model
from skillgrad.train.screens.leak_check import rule_copies
from skillgrad.train.state import TrainState
from skillgrad.types import Trajectory

SOURCE = "contrast"
"""``Edit.source`` of a rule written from a failed and a passing attempt."""
PAIR_CHARS = 300  # each attempt's input, reply and feedback in the prompt: it is read twice


def render_pairs(pairs: Sequence[tuple[Trajectory, Attempt]], show_reference: bool) -> str:
    """The pairs as the optimizer reads them: each failed trajectory, then its passing attempt
    (both carry the item's id and their status)."""
    shown = [t for failed, found in pairs for t in (failed, found.trajectory)]
    return render_trajectories(shown, PAIR_CHARS, show_reference)


async def contrast(
    ctx: RunContext,
    state: TrainState,
    step: int,
    pairs: Sequence[tuple[Trajectory, Attempt]],
) -> ReflectResult:
    """One optimizer call on up to ``train.minibatch_size`` (failed, passing) pairs; its
    record has mode ``contrast`` (the step's ``reflections.json``)."""
    t, skill = ctx.cfg.train, state.skill
    shown = list(pairs)[: t.minibatch_size]
    out = ReflectResult()
    if not shown:
        return out
    choices = skill_choices(skill)
    package = is_package_text(skill)
    schema = reflection_model(
        t.max_edits_per_reflection, lines=choices.lines, headings=choices.headings, package=package
    )
    hint = render_prompt("reflect_revise_hint").rstrip("\n") if choices.lines else ""
    compare = render_prompt(view_of(shown[0][1].trajectory).contrast_prompt).rstrip("\n")
    with call_context("contrast", step):
        reply = await ask_optimizer(
            ctx.optimizer,
            "contrast",
            schema,
            max_tokens=t.optimizer_max_tokens,
            temperature=ctx.cfg.models.optimizer.temperature,
            seed=step,
            check=reply_check(skill, state.rejected_buffer, rule_copies(ctx, state)),
            check_temperature=t.reask_temperature,
            system={"compare": compare},
            skill=skill or EMPTY_SKILL,
            rejected=render_rejected(state.rejected_buffer),
            n_items=len(shown),
            step=step,
            pairs=render_pairs(shown, t.show_reference),
            max_edits=t.max_edits_per_reflection,
            revise_hint=hint,
        )
    ids = [trajectory_id(step, failed.item_id) for failed, _ in shown]
    attempts = [found.cache_id for _, found in shown]
    if reply.parsed is not None:
        out.edits.extend(rule_edits(reply.parsed, skill, ids, SOURCE))
    out.records.append({"mode": SOURCE, "items": ids, "attempts": attempts, **reply.to_json()})
    return out


__all__ = ["SOURCE", "contrast", "render_pairs"]
