"""Why a step could not learn: every reflection failed validation, or every proposed rule was
dropped before it reached the skill (already in the skill, copies train/val data, too long, did
not apply). Without this, such a step reads "no edit applied: gate not run", exactly like a
model that had nothing to say; with it, the step line, ``gate.json``, the report and the
dashboard name the cause and quote the first validation error (``steps/*/reflections.json``
keeps every reply).

A step with no failure to reflect on is not stalled (there was nothing to learn from).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillgrad.types import Edit, EditResult

_PYDANTIC_URL = re.compile(r"For further information visit \S+")  # a link, not the error
ERROR_CHARS = 300  # enough of a pydantic error to name the field, short enough for a step line
STALLED_IN_A_ROW = 2  # consecutive stalled steps before the console warns


def first_error(records: Sequence[dict[str, Any]]) -> str:
    """The first failed reflection's validation error, on one line and cut to ERROR_CHARS."""
    error = next((str(r.get("error") or "") for r in records if not r.get("ok")), "")
    error = _PYDANTIC_URL.sub("", error).removeprefix("output failed validation: ")
    flat = " ".join(error.split())
    return flat if len(flat) <= ERROR_CHARS else flat[: ERROR_CHARS - 1] + "…"


EXAMPLE_CHARS = 60  # one quoted example per cause: enough to recognise the rule


@dataclass(frozen=True)
class Drops:
    """Where a step's proposed rules went before the apply report: ``copied`` (the edits
    dropped for copying data or instructions), ``screened`` and ``dropped`` (edit and reason:
    the line screens before selection, selection's own drops), ``merged`` (rules merged into
    an equivalent one) and ``conflicted`` (held back as opposite changes)."""

    copied: Sequence[Edit] = ()
    screened: Sequence[dict[str, Any]] = ()
    dropped: Sequence[dict[str, Any]] = ()
    merged: int = 0
    conflicted: int = 0


def cause(reason: str) -> tuple[str, str]:
    """A drop reason's category and detail: "already in the skill: '...'" -> ("already in
    the skill", "") (the detail quotes the line, shown as the example instead); "rejected
    before: step 3's ..." stays whole (its detail says why)."""
    head, sep, detail = reason.partition(":")
    if not sep or not detail.strip():
        return reason.strip() or "dropped", ""
    if detail.strip()[:1] in "'\"":
        return head.strip(), ""
    return head.strip(), detail.strip()


def _quote(text: str) -> str:
    flat = " ".join(text.split()).lstrip("-*+ ")
    return repr(flat if len(flat) <= EXAMPLE_CHARS else flat[: EXAMPLE_CHARS - 1] + "…")


def _example(text: str) -> str:
    """How a cause's example follows it: a quoted line as "(e.g. '...')", a detail after ':'."""
    if not text:
        return ""
    return f" (e.g. {text})" if text[:1] in "'\"" else f": {text}"


def _causes(drops: Drops, report: Sequence[EditResult]) -> list[tuple[str, int, str]]:
    """(cause, count, one example) of every dropped rule, most frequent first."""
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}

    def add(why: str, n: int, text: str) -> None:
        if n > 0:
            counts[why] += n
            example.setdefault(why, text)

    for copied in drops.copied:
        add("copy train/val data, a scorer's evidence or the optimizer's instructions", 1,
            _quote(copied.content))  # fmt: skip
    for d in (*drops.screened, *drops.dropped):
        head, detail = cause(str(d.get("reason", "dropped")))
        edit = d.get("edit")
        said = _quote(edit.content or edit.anchor) if isinstance(edit, Edit) else ""
        add(head, 1, f"{detail} (e.g. {said})" if detail and said else detail or said)
    add("merged into an equivalent proposed rule", drops.merged, "")
    add("held back as opposite changes (for review)", drops.conflicted, "")
    for r in report:
        add(f"did not apply ({r.reason})", 1, _quote(r.edit.content or r.edit.anchor))
    return [(why, n, example[why]) for why, n in counts.most_common()]


def stall_reason(
    records: Sequence[dict[str, Any]],
    proposed: int,
    drops: Drops,
    report: Sequence[EditResult],
) -> str:
    """Why no edit reached the candidate ("" when one did, or when nothing was reflected on).

    ``records``: the step's reflection records; ``proposed``: rules the replies held;
    ``drops``: where they went before selection and in it (``Drops``); ``report``: the apply
    report of the selected edits. Every dropped rule is counted under its cause, with one
    example of each."""
    if not records or any(r.status == "applied" for r in report):
        return ""
    failed = sum(1 for r in records if not r.get("ok"))
    if failed == len(records):
        return (
            f"every reflection failed validation ({failed} of {failed}); "
            f"first error: {first_error(records)}"
        )
    if proposed == 0:
        also = ""
        if failed:
            also = f"{failed} failed validation (first error: {first_error(records)}), "
        return f"the optimizer proposed no rule ({also}{len(records) - failed} valid replies)"
    parts = ", ".join(f"{n} {why}{_example(ex)}" for why, n, ex in _causes(drops, report))
    return f"all {proposed} proposed rules dropped: {parts}"


def stall_warning(history: Sequence[Any]) -> str | None:
    """The console warning once the last ``STALLED_IN_A_ROW`` training steps all stalled."""
    steps = [r for r in history if r.kind == "step"][-STALLED_IN_A_ROW:]
    if len(steps) < STALLED_IN_A_ROW or not all(r.stall_reason for r in steps):
        return None
    last = steps[-1]
    return (
        f"{STALLED_IN_A_ROW} steps in a row could not learn (steps "
        f"{', '.join(str(r.step) for r in steps)}); last: {last.stall_reason}. Check the "
        f"optimizer's replies in steps/step_{last.step:04d}/reflections.json"
    )


__all__ = [
    "STALLED_IN_A_ROW",
    "Drops",
    "cause",
    "first_error",
    "stall_reason",
    "stall_warning",
]
