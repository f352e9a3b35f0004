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
from typing import Any

from skillgrad.types import EditResult

_PYDANTIC_URL = re.compile(r"For further information visit \S+")  # a link, not the error
ERROR_CHARS = 300  # enough of a pydantic error to name the field, short enough for a step line
STALLED_IN_A_ROW = 2  # consecutive stalled steps before the console warns


def first_error(records: Sequence[dict[str, Any]]) -> str:
    """The first failed reflection's validation error, on one line and cut to ERROR_CHARS."""
    error = next((str(r.get("error") or "") for r in records if not r.get("ok")), "")
    error = _PYDANTIC_URL.sub("", error).removeprefix("output failed validation: ")
    flat = " ".join(error.split())
    return flat if len(flat) <= ERROR_CHARS else flat[: ERROR_CHARS - 1] + "…"


def stall_reason(
    records: Sequence[dict[str, Any]],
    proposed: int,
    leak_dropped: int,
    dropped: Sequence[dict[str, Any]],
    report: Sequence[EditResult],
) -> str:
    """Why no edit reached the candidate ("" when one did, or when nothing was reflected on).

    ``records``: the step's reflection records; ``proposed``: rules the replies held;
    ``leak_dropped``: rules dropped for copying data; ``dropped``: selection's drops (with a
    ``reason``); ``report``: the apply report of the selected edits."""
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
    causes: Counter[str] = Counter()
    if leak_dropped:
        causes["copy train/val data, a scorer's evidence or the optimizer's instructions"] += (
            leak_dropped
        )
    for d in dropped:
        causes[str(d.get("reason", "dropped"))] += 1
    for r in report:
        causes[f"did not apply ({r.reason})"] += 1
    parts = ", ".join(f"{n} {why}" for why, n in causes.most_common())
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
    "first_error",
    "stall_reason",
    "stall_warning",
]
