"""Adherence (``train.adherence``): for each rule of the skill, how often the target breaks it
when it applies, judged by the optimizer on the step's TRAIN trajectories only.

One optimizer call per step at most (``prompts/adherence_*.md``), cached like every call: the
skill's rules numbered and up to ``MAX_SHOWN`` of the step's train trajectories; the reply is
validated and bounded (a rule number outside the list, or a count beyond the tasks shown, is
cut). Small targets often ignore a skill; this shows which rule, instead of guessing. The rules
broken most go to revise mode (``train/revise.py``), which rewrites the rules the target does
not follow. Off by default: it costs one optimizer call per step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from skillgrad.models.context import call_context
from skillgrad.train.context import RunContext
from skillgrad.train.optimizer_call import ask_optimizer
from skillgrad.train.reflect import render_trajectories
from skillgrad.train.screens.dedup import skill_lines
from skillgrad.types import Trajectory

MAX_RULES = 30
MAX_SHOWN = 8
TRAJECTORY_CHARS = 240
IGNORED_SHARE = 0.5  # broken in at least half the tasks a rule applies to: it is ignored
MAX_IGNORED = 3


class RuleAdherence(BaseModel):
    rule: int = Field(ge=1, le=MAX_RULES)
    applies: int = Field(ge=0, le=MAX_SHOWN)
    broken: int = Field(ge=0, le=MAX_SHOWN)


class AdherenceOutput(BaseModel):
    rules: list[RuleAdherence] = Field(max_length=MAX_RULES)


@dataclass
class Adherence:
    """One step's judgement: ``rows`` ({"rule": text, "applies", "broken"}) and the call
    record (for ``steps/step_NNNN/adherence.json``)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)

    def ignored(self) -> list[str]:
        """The rules broken in at least ``IGNORED_SHARE`` of the tasks they apply to, most
        broken first (at most ``MAX_IGNORED``): what revise mode should rewrite."""
        hit = [r for r in self.rows if r["broken"] and r["broken"] >= IGNORED_SHARE * r["applies"]]
        hit.sort(key=lambda r: (-r["broken"], -r["broken"] / max(1, r["applies"])))
        return [r["rule"] for r in hit[:MAX_IGNORED]]


def rule_rows(reply: AdherenceOutput, rules: Sequence[str], shown: int) -> list[dict[str, Any]]:
    """The reply as rows, bounded: rule numbers outside ``rules`` are left out (the first answer
    per rule counts), ``applies`` is at most the tasks shown, ``broken`` at most ``applies``."""
    rows: dict[int, dict[str, Any]] = {}
    for r in reply.rules:
        if r.rule > len(rules) or r.rule in rows:
            continue
        applies = min(r.applies, shown)
        rows[r.rule] = {"rule": rules[r.rule - 1], "applies": applies,
                        "broken": min(r.broken, applies)}  # fmt: skip
    return [rows[i] for i in sorted(rows)]


async def judge_adherence(
    ctx: RunContext, step: int, skill: str, trajs: Sequence[Trajectory]
) -> Adherence | None:
    """The optimizer's count of each rule's applications and breaks on the step's train
    trajectories (None when ``train.adherence`` is off or there is no rule or trajectory)."""
    t = ctx.cfg.train
    rules = skill_lines(skill)[:MAX_RULES]
    shown = [x for x in trajs if x.infra_error is None][:MAX_SHOWN]
    if t.adherence != "on" or not rules or not shown:
        return None
    with call_context("adherence", step):
        reply = await ask_optimizer(
            ctx.optimizer,
            "adherence",
            AdherenceOutput,
            max_tokens=t.optimizer_max_tokens,
            seed=step,
            rules="\n".join(f"{i}. {r.lstrip('-*+ ')}" for i, r in enumerate(rules, 1)),
            n_items=len(shown),
            step=step,
            trajectories=render_trajectories(shown, TRAJECTORY_CHARS, t.show_reference),
        )
    rows = rule_rows(reply.parsed, rules, len(shown)) if reply.parsed is not None else []
    record = {"items": [x.item_id for x in shown], "rows": rows, **reply.to_json()}
    return Adherence(rows, record)


def adherence_summary(
    totals: Mapping[str, Mapping[str, int]], best_skill: str
) -> list[dict[str, Any]]:
    """summary.json's ``adherence``: every judged rule, most broken first, and whether the best
    skill still holds it (revise mode may have rewritten it)."""
    kept = set(skill_lines(best_skill))
    rows = [{"rule": rule, **dict(v), "in_best": rule in kept} for rule, v in totals.items()]
    return sorted(rows, key=lambda r: (-r["broken"], -r["applies"], r["rule"]))


__all__ = [
    "Adherence",
    "AdherenceOutput",
    "RuleAdherence",
    "adherence_summary",
    "judge_adherence",
    "rule_rows",
]
