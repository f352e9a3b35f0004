"""The answer-leak check of a candidate inside a run (the detection itself:
``train/screens/leaks.py``).

Run on every candidate with an applied edit, before any target call: its new lines copying
train/val data are flagged (a warning event, the step record) and, under
``train.reject_leaks``, the candidate is refused without being scored.

Under ``train.reject_leaks`` the check also runs earlier, on each proposed rule: a reflection
reply with a rule that copies an item earns the one re-ask (``rule_copies``), and a rule that
still copies is dropped before selection (``drop_copies``), so the other rules of the step
still reach the gate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from skillgrad.runs.records import Leak
from skillgrad.skill.text import visible
from skillgrad.train.context import RunContext
from skillgrad.train.examples import example_lines
from skillgrad.train.rules import instruction_copied
from skillgrad.train.screens.firewall import evidence_leaks, exempt_text
from skillgrad.train.screens.leaks import describe, new_leaks, short_span
from skillgrad.train.state import TrainState
from skillgrad.types import Edit, to_json


@dataclass(frozen=True)
class LeakCheck:
    """The answer-leak check of one candidate: the lines copying train/val data that the skill
    in force did not have (``new``) and those it already had (``inherited``)."""

    new: tuple[Leak, ...] = ()
    inherited: tuple[Leak, ...] = ()
    examples: tuple[Leak, ...] = ()
    """Lines of worked examples copying their own train item: allowed, recorded."""

    def to_json(self, refused: str) -> dict[str, Any]:
        """``leaks.json`` of a step (or slow update) whose candidate had an edit applied."""
        return {
            "refused": bool(refused),
            "new": to_json(self.new),
            "inherited": to_json(self.inherited),
            "examples": to_json(self.examples),
        }


def check_leaks(
    ctx: RunContext, state: TrainState, candidate: str, examples: Sequence[str] = ()
) -> LeakCheck:
    """Leaks of ``candidate`` against the run's train and val items, the initial skill's own
    text exempt (``train/screens/leaks.py``), and against their scorers' evidence
    (``train/screens/firewall.py``;
    ``examples``: text of code-built example edits, exempt too). No model call."""
    index = ctx.leak_index
    found = index.find(candidate, exempt=state.initial_skill)
    found += scorer_evidence_leaks(ctx, candidate, exempt_text(state.initial_skill, examples))
    before = index.find(state.skill, exempt=state.initial_skill)
    before += scorer_evidence_leaks(ctx, state.skill, exempt_text(state.initial_skill, examples))
    allowed = example_copies(candidate, found)
    new = tuple(x for x in new_leaks(found, before) if x not in allowed)
    return LeakCheck(new, tuple(x for x in found if x not in new and x not in allowed), allowed)


def example_copies(candidate: str, leaks: Sequence[Leak]) -> tuple[Leak, ...]:
    """The ``leaks`` that are a worked example copying its own TRAIN item (allowed by design,
    ``train/examples.py``): on a line of the Examples section and of a train item. A val copy
    is never among them, wherever it stands."""
    shown = example_lines(candidate)
    lines = candidate.split("\n")
    return tuple(
        x
        for x in leaks
        if x.split == "train"
        and not x.file
        and 0 < x.line <= len(lines)
        and lines[x.line - 1].strip() in shown
    )


def scorer_evidence_leaks(ctx: RunContext, text: str, exempt: str) -> tuple[Leak, ...]:
    """Lines of ``text`` copying a train/val item's scorer evidence
    (``train/screens/firewall.py``)."""
    splits = {i.id: s for s in ("train", "val") for i in ctx.items.get(s, [])}
    return evidence_leaks(text, ctx.store.evidence(), splits, ctx.cfg.train.leak_ngram, exempt)


def leak_refusal(ctx: RunContext, step: int, leaks: tuple[Leak, ...]) -> str:
    """Flag a candidate's new leaks (a warning event); under ``train.reject_leaks`` return the
    reason it is refused before any target call, else ``""``."""
    if not leaks:
        return ""
    evidence = any(x.source == "evidence" for x in leaks)
    reject = ctx.cfg.train.reject_leaks or evidence  # a checker's internals: always refused
    n = len(leaks)
    what = f"{n} line{'s copy' if n != 1 else ' copies'} train/val data verbatim"
    if evidence:
        what += " (a scorer's evidence among it)"
    action = (
        "refused (a scorer's evidence is never learned)"
        if evidence
        else "refused (train.reject_leaks)"
        if reject
        else "flagged (train.reject_leaks is off)"
    )
    ctx.emit("warning", message=f"step {step}: candidate: {what}: {describe(leaks)}; {action}")
    if not reject:
        return ""
    return f"refused before evaluation: {what} ({describe(leaks, limit=1)})"


def rule_copies(ctx: RunContext, state: TrainState) -> Callable[[str], str | None] | None:
    """Under ``train.reject_leaks``: what a proposed rule's text copies from a train/val item,
    in words for the re-ask (None when it copies nothing); the initial skill's text exempt."""
    if not ctx.cfg.train.reject_leaks:
        return None
    index, exempt = ctx.leak_index, state.initial_skill

    def copies(text: str) -> str | None:
        found = index.find(text, exempt=exempt)
        if not found:
            return None
        x = found[0]
        return f"{x.source} of a {x.split} task ({short_span(visible(x.span))!r})"

    return copies


def drop_copies(ctx: RunContext, state: TrainState, step: int, edits: Sequence[Edit]) -> list[Edit]:
    """``edits`` without those whose text copies a scorer's evidence or the optimizer's own
    instructions (``rules.instruction_copied``; always) or, under ``train.reject_leaks``,
    train/val data (a warning names them)."""
    reject = ctx.cfg.train.reject_leaks
    index, exempt = ctx.leak_index, state.initial_skill
    kept: list[Edit] = []
    found: list[Leak] = []
    recited: list[str] = []
    n = 0
    for edit in edits:
        said = instruction_copied(edit.content) if edit.source != "example" else None
        if said is not None:
            recited.append(said)
            continue
        leaks = index.find(edit.content, exempt=exempt) if reject else ()
        if edit.source != "example":  # code-built examples may quote train items' evidence
            leaks += scorer_evidence_leaks(ctx, edit.content, exempt)
        if leaks:
            found.extend(leaks)
            n += 1
        else:
            kept.append(edit)
    if n:
        ctx.emit(
            "warning",
            message=f"step {step}: {n} proposed rule{'s' if n != 1 else ''} copying train/val "
            f"data or a scorer's evidence dropped before selection: {describe(found)}",
        )
    if recited:
        quoted = "; ".join(sorted({short_span(x) for x in recited}))
        ctx.emit(
            "warning",
            message=f"step {step}: {len(recited)} proposed rule{'s' if len(recited) != 1 else ''}"
            f" repeating the optimizer's own instructions or a line only code writes dropped "
            f"before selection: {quoted}",
        )
    return kept


__all__ = [
    "LeakCheck",
    "check_leaks",
    "drop_copies",
    "example_copies",
    "leak_refusal",
    "rule_copies",
]
