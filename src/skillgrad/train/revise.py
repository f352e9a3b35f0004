"""Revise mode: when adding is exhausted, rewrite, merge or delete the rules the target ignores.

Adding is exhausted when a step's proposals repeat lines the skill already has (``dedup.screen``
reports them): the rule is there and the target still fails the items it covers. Then one
optimizer call (``prompts/revise_*.md``) is shown those rules, the contradictions inside the
skill (``dedup.skill_contradictions``), the revisions tried before, and the failed trajectories
with the target's output next to the expected one; it may rewrite a rule (``replace``), merge it
with a neighbour, delete it, or delete a rule contradicting it.

Measured: asked to revise its own rule, the 1.5B returns it unchanged. A revision
that changes nothing, or was tried before (the rejected-edit buffer and ``TrainState.tried``),
is dropped, and so is a revision reciting the optimizer's own instructions
(``rules.instruction_copied``: measured on the quickstart, a revision that was the revise
prompt's "rewrite it … more concrete" line); when none is left, the revision is built by code
from the expected form: the rule followed by the exact reply a failed train item required (its
reference, passed by the task's scorer), never the optimizer's paraphrase of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillgrad.models.base import ModelBackend
from skillgrad.runs.records import RejectedEdit
from skillgrad.train.examples import example_reply
from skillgrad.train.optimizer_call import ask_optimizer
from skillgrad.train.reflect import (
    EMPTY_SKILL,
    render_rejected,
    render_trajectories,
    trajectory_id,
)
from skillgrad.train.rules import instruction_copied, rule_edits, rule_key, skill_choices
from skillgrad.train.schemas import reflection_model
from skillgrad.train.screens.dedup import edit_key, skill_contradictions
from skillgrad.types import Edit, Item, Trajectory

SOURCE = "revise"
BUILT = "revise_built"
"""``Edit.source`` of a revision written by the optimizer / built by code from the expected form."""
MAX_SHOWN = 6
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass
class Revision:
    """The revise call's usable edits, what was dropped (edit, reason) and its call record."""

    edits: list[Edit] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)


def _usable(edits: Iterable[Edit], tried: set[str], out: Revision) -> None:
    for e in edits:
        if e.op == "add":
            out.dropped.append({"edit": e, "reason": "revise mode: a new rule, not a revision"})
        elif e.op == "replace" and rule_key(e.content) == rule_key(e.anchor):
            out.dropped.append({"edit": e, "reason": "revise mode: returned the rule unchanged"})
        elif edit_key(e) in tried:
            out.dropped.append({"edit": e, "reason": "revise mode: tried before"})
        elif said := instruction_copied(e.content):
            why = f"revise mode: repeats the optimizer's own instructions ({said[:80]!r})"
            out.dropped.append({"edit": e, "reason": why})
        else:
            out.edits.append(e)


async def revise(
    step: int,
    skill: str,
    rules: Sequence[str],
    failures: Sequence[Trajectory],
    optimizer: ModelBackend,
    *,
    rejected: Sequence[RejectedEdit],
    tried: Iterable[str],
    max_edits: int,
    max_tokens: int,
    temperature: float = 0.0,
    show_reference: bool = True,
) -> Revision:
    """Ask for revisions of ``rules`` (skill lines the target does not follow) from the step's
    ``failures`` (their references withheld unless ``show_reference``); keep those that change
    something and were not tried before."""
    out = Revision()
    tried_keys = set(tried) | {edit_key(e) for r in rejected for e in r.edits}
    choices = skill_choices(skill)
    contradictions = skill_contradictions(skill)
    shown = list(failures)[:MAX_SHOWN]
    schema = reflection_model(max_edits, lines=choices.lines, headings=())
    reply = await ask_optimizer(
        optimizer,
        "revise",
        schema,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=step,
        skill=skill or EMPTY_SKILL,
        rules="\n".join(f"- {_ITEM.sub('', r)}" for r in dict.fromkeys(rules)) or "(none)",
        contradictions="\n".join(f"- {a!r} against {b!r}" for a, b in contradictions) or "(none)",
        rejected=render_rejected(rejected),
        n_items=len(shown),
        step=step,
        trajectories=render_trajectories(shown, 240, show_reference),
        max_edits=max_edits,
    )
    ids = [trajectory_id(step, t.item_id) for t in shown]
    if reply.parsed is not None:
        _usable(rule_edits(reply.parsed, skill, ids, SOURCE), tried_keys, out)
    out.records.append({"mode": "revise", "rules": list(rules), "items": ids, **reply.to_json()})
    return out


def built_revision(
    step: int,
    rules: Sequence[str],
    failures: Sequence[Trajectory],
    items: Mapping[str, Item],
    scorer: Any,
    tried: Iterable[str],
) -> Edit | None:
    """The revision built by code: a rule the target ignores, followed by the exact reply form
    one failed train item required (its reference, when the scorer passes it; one short line).
    A rule whose built revision was tried before is not built again (the gate said no)."""
    seen = set(tried)
    done = {k.split("|")[1] for k in seen if k.startswith("replace|")}
    for rule in dict.fromkeys(rules):
        if rule_key(rule) in done:
            continue
        for t in failures:
            form = example_reply(t, items.get(t.item_id), scorer)
            if form is None or t.score.passed or "\n" in form.strip() or len(form) > 80:
                continue
            text = f"{rule.rstrip()} Reply in exactly this form: {form.strip()}"
            edit = Edit(
                op="replace",
                section="",
                anchor=rule,
                content=text,
                rationale=f"revise mode: the rule with the reply form train item {t.item_id} "
                "required (the rule alone was not followed)",
                trajectory_ids=(trajectory_id(step, t.item_id),),
                source=BUILT,
            )
            if edit_key(edit) not in seen:
                return edit
    return None


__all__ = ["BUILT", "SOURCE", "Revision", "built_revision", "edit_key", "revise"]
