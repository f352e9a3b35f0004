"""The answer-leak check of a candidate inside a run (the detection itself: ``train/leaks.py``).

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
from skillgrad.train.context import RunContext
from skillgrad.train.leaks import describe, new_leaks, short_span
from skillgrad.train.state import TrainState
from skillgrad.types import Edit, to_json


@dataclass(frozen=True)
class LeakCheck:
    """The answer-leak check of one candidate: the lines copying train/val data that the skill
    in force did not have (``new``) and those it already had (``inherited``)."""

    new: tuple[Leak, ...] = ()
    inherited: tuple[Leak, ...] = ()

    def to_json(self, refused: str) -> dict[str, Any]:
        """``leaks.json`` of a step (or slow update) whose candidate had an edit applied."""
        return {
            "refused": bool(refused),
            "new": to_json(self.new),
            "inherited": to_json(self.inherited),
        }


def check_leaks(ctx: RunContext, state: TrainState, candidate: str) -> LeakCheck:
    """Leaks of ``candidate`` against the run's train and val items, the initial skill's own
    text exempt (``train/leaks.py``). No model call: linear in the skill's length."""
    index = ctx.leak_index
    found = index.find(candidate, exempt=state.initial_skill)
    new = new_leaks(found, index.find(state.skill, exempt=state.initial_skill))
    return LeakCheck(new, tuple(x for x in found if x not in new))


def leak_refusal(ctx: RunContext, step: int, leaks: tuple[Leak, ...]) -> str:
    """Flag a candidate's new leaks (a warning event); under ``train.reject_leaks`` return the
    reason it is refused before any target call, else ``""``."""
    if not leaks:
        return ""
    reject = ctx.cfg.train.reject_leaks
    n = len(leaks)
    what = f"{n} line{'s copy' if n != 1 else ' copies'} train/val data verbatim"
    action = "refused (train.reject_leaks)" if reject else "flagged (train.reject_leaks is off)"
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
        return f"{x.source} of a {x.split} task ({short_span(x.span)!r})"

    return copies


def drop_copies(ctx: RunContext, state: TrainState, step: int, edits: Sequence[Edit]) -> list[Edit]:
    """Under ``train.reject_leaks``, ``edits`` without those whose text copies train/val data
    (a warning names them); without it, all of them."""
    if not ctx.cfg.train.reject_leaks:
        return list(edits)
    index, exempt = ctx.leak_index, state.initial_skill
    kept: list[Edit] = []
    found: list[Leak] = []
    n = 0
    for edit in edits:
        leaks = index.find(edit.content, exempt=exempt)
        if leaks:
            found.extend(leaks)
            n += 1
        else:
            kept.append(edit)
    if n:
        ctx.emit(
            "warning",
            message=f"step {step}: {n} proposed rule{'s' if n != 1 else ''} copying train/val "
            f"data dropped before selection (train.reject_leaks): {describe(found)}",
        )
    return kept


__all__ = ["LeakCheck", "check_leaks", "drop_copies", "leak_refusal", "rule_copies"]
