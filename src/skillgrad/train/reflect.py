"""Reflect (the backward pass): the optimizer reads scored trajectories and proposes edits.

Shallow mode: failed trajectories (and successes unless ``failure_only``) are cut into
minibatches of like feedback (``feedback_batches``), one optimizer call each,
``analyst_workers`` in parallel. Deep mode: when one failure pattern covers more than
``deep_reflect_threshold`` of the step's failures, one extra call cross-references every
trajectory of that pattern and proposes systemic edits. A pattern is a cluster of the scorer's
feedback (deterministic: no model call decides it).

The optimizer is asked for rules first (measured: a small model writes the right general rule
when asked for it first, and copies whatever example a prompt shows); where a rule goes is an
optional choice among the skill's real lines and headings (``train/rules.py``).
"""

from __future__ import annotations

import asyncio
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillgrad.models.base import ModelBackend
from skillgrad.models.structured import GRAMMAR_MAX_LENGTH, StructuredReply
from skillgrad.prompts import render_prompt
from skillgrad.runs.records import RejectedEdit
from skillgrad.skill.package import is_package_text
from skillgrad.tasks.views import view_of
from skillgrad.train.optimizer_call import ask_optimizer
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.train.rules import is_cut, known_rules, only_repeats, rule_edits, skill_choices
from skillgrad.train.schemas import reflection_model
from skillgrad.train.screens.leaks import texts_of
from skillgrad.types import Edit, Trajectory


@dataclass(frozen=True)
class ReflectConfig:
    minibatch_size: int
    max_edits: int
    failure_only: bool
    deep_threshold: float
    workers: int
    max_tokens: int
    temperature: float = 0.0
    reask_temperature: float | None = None
    """Temperature of the one re-ask after a reply that only repeats known rules or copies an
    item (the calls are seeded with the step number)."""
    copies: Callable[[str], str | None] | None = None
    """What a rule's text copies from the run's train/val items (None: nothing); given, a reply
    with such a rule earns the one re-ask (``train.reject_leaks``)."""
    show_reference: bool = True
    """Whether the optimizer sees each item's gold reference (``train.show_reference``)."""


@dataclass
class ReflectResult:
    edits: list[Edit] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.records)

    @property
    def failed_calls(self) -> int:
        return sum(1 for r in self.records if not r["ok"])


def trajectory_id(step: int, item_id: str) -> str:
    return f"step_{step:04d}/{item_id}"


WITHHELD = "(withheld: train.show_reference is off)"


def withhold(text: str, references: Sequence[Any]) -> str:
    """``text`` with every string of ``references`` (an item's gold: a string, a number, the
    elements of a list or the values of a mapping) masked as "(withheld)", in any letter case
    and as Python would quote it: what feedback quoting the gold shows once
    ``train.show_reference`` is off."""
    golds = {g for r in references for g in texts_of(r) if g.strip()}
    golds |= {repr(g)[1:-1] for g in golds}
    for gold in sorted(golds, key=len, reverse=True):
        text = re.sub(re.escape(gold), "(withheld)", text, flags=re.IGNORECASE)
    return text


def render_trajectories(
    trajs: Sequence[Trajectory], limit: int = 500, show_reference: bool = True
) -> str:
    """The optimizer's view of trajectories (``prompts/trajectory.md``): input and gold side by
    side (what the skill must map one to the other; ``show_reference=False``: the gold is
    withheld, also where the feedback quotes it), output, score, feedback, error; the view of
    each one's kind (``tasks/views.py``) shows that block, adds to it (an agent's transcript)
    or shows its own (an environment episode's is compact). A scorer's ``evidence`` is never
    shown (the verifier-leak firewall, ``train/screens/firewall.py``)."""
    blocks = []
    for t in trajs:
        feedback = t.score.feedback
        if not show_reference:
            feedback = withhold(feedback, [t.reference])
        generic = _generic_block(t, feedback, limit, show_reference)
        blocks.append(view_of(t).for_optimizer(t, generic, feedback, show_reference, limit))
    return "\n\n".join(blocks) if blocks else "(none)"


def _generic_block(t: Trajectory, feedback: str, limit: int, show_reference: bool) -> str:
    user = next((m.content for m in reversed(t.messages) if m.role == "user"), "")
    gold = str(t.reference)
    block = render_prompt(
        "trajectory",
        item_id=t.item_id,
        score=f"{t.score.value:.2f}",
        status="PASS" if t.score.passed else "FAIL",
        input=user[:limit],
        expected=gold[:limit] if show_reference else WITHHELD,
        output=repr(t.output[:limit]),
        feedback=feedback[:limit],
    )
    if t.error:
        block += "\n" + render_prompt("trajectory_error", error=t.error[:limit])
    return block


def render_rejected(buffer: Sequence[RejectedEdit]) -> str:
    """Rules the gate rejected (with the validation scores) or refused before evaluation."""
    rows = []
    for entry in buffer:
        for e in entry.edits:
            what = repr((e.content or e.anchor or "")[:160])
            if entry.refused:  # refused before the gate (e.g. it copied data): no scores
                row = render_prompt(
                    "refused_edit_row", step=entry.step, what=what, reason=entry.refused
                )
            else:
                row = render_prompt(
                    "rejected_edit_row",
                    step=entry.step,
                    what=what,
                    candidate=f"{entry.candidate:.3f}",
                    incumbent=f"{entry.incumbent:.3f}",
                )
            rows.append(row)
    return "\n".join(rows) or "(none)"


EMPTY_SKILL = "(empty: the target has no instructions yet)"


def _edits_from(
    reply: StructuredReply[Any], skill: str, ids: Sequence[str], source: str
) -> list[Edit]:
    return [] if reply.parsed is None else rule_edits(reply.parsed, skill, ids, source)


def _prompt_fields(
    skill: str, meta_memo: str, rejected: Sequence[RejectedEdit], step: int, max_edits: int
) -> tuple[dict[str, Any], type[Any]]:
    """The fields every reflection prompt of a step shares, and the step's reply schema (the
    skill's real lines and headings are the only anchors and sections it offers)."""
    choices = skill_choices(skill)
    package = is_package_text(skill)
    schema = reflection_model(
        max_edits,
        lines=choices.lines,
        headings=choices.headings,
        package=package,
    )
    hint = render_prompt("reflect_revise_hint").rstrip("\n") if choices.lines else ""
    if package:
        hint += render_prompt("reflect_package_hint").rstrip("\n")
    fields = {
        "skill": skill or EMPTY_SKILL,
        "meta": meta_memo or "(none yet)",
        "rejected": render_rejected(rejected),
        "step": step,
        "max_edits": max_edits,
        "revise_hint": hint,
    }
    return fields, schema


async def reflect(
    step: int,
    skill: str,
    trajectories: Sequence[Trajectory],
    optimizer: ModelBackend,
    cfg: ReflectConfig,
    *,
    meta_memo: str = "",
    rejected: Sequence[RejectedEdit] = (),
    progress: Progress | None = None,
) -> ReflectResult:
    progress = progress or NullProgress()
    # an infrastructure failure (agent crashed, endpoint down) says nothing about the skill
    trajectories = [t for t in trajectories if t.infra_error is None]
    failures = [t for t in trajectories if not t.score.passed]
    chosen = failures if cfg.failure_only else list(trajectories)
    batches = feedback_batches(chosen, cfg.minibatch_size)
    common, schema = _prompt_fields(skill, meta_memo, rejected, step, cfg.max_edits)
    check = reply_check(skill, rejected, cfg.copies)
    limit = asyncio.Semaphore(cfg.workers)
    progress.start("reflect", len(batches))

    async def shallow(batch: list[Trajectory]) -> StructuredReply[Any]:
        async with limit:
            reply = await ask_optimizer(
                optimizer,
                "reflect",
                schema,
                max_tokens=cfg.max_tokens,
                temperature=cfg.temperature,
                seed=step,
                check=check,
                check_temperature=cfg.reask_temperature,
                **common,
                n_items=len(batch),
                trajectories=render_trajectories(batch, show_reference=cfg.show_reference),
            )
        progress.advance("reflect", info="ok" if reply.error is None else "invalid")
        return reply

    try:
        replies = await asyncio.gather(*(shallow(b) for b in batches))
    finally:
        progress.finish("reflect")
    result = ReflectResult()
    for batch, reply in zip(batches, replies, strict=True):
        ids = [trajectory_id(step, t.item_id) for t in batch]
        result.edits.extend(_edits_from(reply, skill, ids, "reflect"))
        result.records.append({"mode": "shallow", "items": ids, **reply.to_json()})
    if len(batches) > 1:
        await _deep(step, skill, failures, optimizer, cfg, (common, schema, check), result)
    return result


def reply_check(
    skill: str,
    rejected: Sequence[RejectedEdit],
    copies: Callable[[str], str | None] | None = None,
) -> Callable[[Any], str | None]:
    """The reflection reply check, which earns one re-ask saying why:
    - every rule is already in the skill, or was rejected before (measured: a small optimizer
      at temperature 0 otherwise proposes the rules it already wrote, step after step);
    - a rule was cut mid-sentence at the schema's string cap (``rules.is_cut``; it is dropped
      if the re-ask still cuts it);
    - with ``copies``, a rule copies a train/val item's text (measured: the 1.5B writes a failed
      IFBench prompt's own instruction, or a HumanEval problem's statement, as its rule)."""
    known = known_rules(skill, [e for r in rejected for e in r.edits])

    def check(reply: Any) -> str | None:
        if only_repeats(reply, known):
            return render_prompt("reflect_repeated").strip()
        for number, proposal in enumerate(reply.rules, start=1):
            if is_cut(proposal.rule):
                return render_prompt("reflect_cut", number=number, limit=GRAMMAR_MAX_LENGTH).strip()
            what = copies(proposal.rule) if copies is not None else None
            if what:
                return render_prompt("reflect_copied", number=number, what=what).strip()
        return None

    return check


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|\d+(?:\.\d+)?")


def feedback_key(feedback: str) -> str:
    """The scorer's feedback without what differs from item to item (quoted text, numbers)."""
    return " ".join(_QUOTED.sub("_", feedback.lower()).split())[:300]


def _clusters(failures: Sequence[Trajectory]) -> list[list[int]]:
    """Indices of ``failures`` clustered by feedback similarity once quoted values and numbers
    are masked (``feedback_key``), largest first (ties: the masked text)."""
    clusters: list[tuple[str, list[int]]] = []
    for n, t in enumerate(failures):
        key = feedback_key(t.score.feedback)
        for name, members in clusters:
            if difflib.SequenceMatcher(None, name, key).ratio() >= 0.6:
                members.append(n)
                break
        else:
            clusters.append((key, [n]))
    clusters.sort(key=lambda c: (-len({failures[i].item_id for i in c[1]}), c[0]))
    return [members for _, members in clusters]


def feedback_clusters(failures: Sequence[Trajectory]) -> list[tuple[str, set[str]]]:
    """Failure patterns: the scorer's feedback clustered by text similarity once quoted values
    and numbers are masked; (a feedback of the cluster, its item ids), largest first."""
    return [
        (failures[c[0]].score.feedback, {failures[i].item_id for i in c})
        for c in _clusters(failures)
    ]


def feedback_batches(trajs: Sequence[Trajectory], size: int) -> list[list[Trajectory]]:
    """Minibatches of at most ``size`` whose trajectories share feedback where they can: each
    feedback cluster (``feedback_clusters``) cut into pieces of ``size``, the pieces packed
    first-fit, largest first, so there are about as many batches as plain cuts of ``size``
    would make, and a piece is never split. Measured: a small optimizer shown four unrelated
    failures writes a rule about one of them; shown failures of one kind, it writes their
    common cause. Deterministic: trajectory order within a piece and among equals is kept."""
    pieces: list[list[Trajectory]] = []
    for cluster in _clusters(trajs):
        members = [trajs[i] for i in cluster]
        pieces += [members[i : i + size] for i in range(0, len(members), size)]
    batches: list[list[Trajectory]] = []
    for piece in sorted(pieces, key=len, reverse=True):  # stable: equals keep cluster order
        room = next((b for b in batches if len(b) + len(piece) <= size), None)
        if room is None:
            batches.append(list(piece))
        else:
            room.extend(piece)
    return batches


def dominant_pattern(failures: Sequence[Trajectory]) -> tuple[str, set[str]] | None:
    """The failure pattern covering most failures (``feedback_clusters``), or None."""
    clusters = feedback_clusters(failures)
    return clusters[0] if clusters else None


def feedback_summary(
    trajectories: Sequence[Trajectory], limit: int = 3, show_reference: bool = True
) -> str:
    """The most common feedback of the failed trajectories, one line per pattern (the
    pattern's gold references withheld unless ``show_reference``)."""
    failures = [t for t in trajectories if not t.score.passed and t.infra_error is None]
    rows = [
        f"- {_pattern(shown, ids, failures, show_reference)[:300]} ({len(ids)} tasks)"
        for shown, ids in feedback_clusters(failures)
    ]
    return "\n".join(rows[:limit]) or "(no failures)"


def _pattern(
    feedback: str, ids: set[str], trajectories: Sequence[Trajectory], show_reference: bool
) -> str:
    """A failure pattern's feedback as the optimizer reads it: the references of the pattern's
    items withheld unless ``show_reference``."""
    if show_reference:
        return feedback
    return withhold(feedback, [t.reference for t in trajectories if t.item_id in ids])


async def _deep(
    step: int,
    skill: str,
    failures: list[Trajectory],
    optimizer: ModelBackend,
    cfg: ReflectConfig,
    prompt: tuple[dict[str, Any], type[Any], Callable[[Any], str | None]],
    result: ReflectResult,
) -> None:
    found = dominant_pattern(failures)
    if found is None or not failures:
        return
    pattern, ids = found
    share = len(ids) / len(failures)
    if share <= cfg.deep_threshold or len(ids) < 2:
        return
    common, schema, check = prompt
    group = [t for t in failures if t.item_id in ids][:12]
    reply = await ask_optimizer(
        optimizer,
        "deep_reflect",
        schema,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        seed=step,
        check=check,
        check_temperature=cfg.reask_temperature,
        **common,
        pattern=_pattern(pattern, ids, failures, cfg.show_reference)[:300],
        share=f"{share:.0%}",
        n_items=len(group),
        trajectories=render_trajectories(group, 300, cfg.show_reference),
    )
    tids = [trajectory_id(step, t.item_id) for t in group]
    result.edits.extend(_edits_from(reply, skill, tids, "deep_reflect"))
    result.records.append({"mode": "deep", "pattern": pattern, "items": tids, **reply.to_json()})


__all__ = [
    "ReflectConfig",
    "ReflectResult",
    "dominant_pattern",
    "feedback_batches",
    "feedback_clusters",
    "feedback_key",
    "feedback_summary",
    "reflect",
    "render_trajectories",
    "trajectory_id",
    "withhold",
]
