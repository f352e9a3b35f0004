"""Small text helpers shared by the HTML report and the dashboard (no plotting imports).

Kept apart from ``html.py`` so the dashboard extra works without matplotlib installed.
"""

from __future__ import annotations

from typing import Any


def fmt(value: Any, digits: int = 3) -> str:
    """Numbers to short text (trailing zeros trimmed); missing values to an en dash."""
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return str(value)


def verdict(record: dict[str, Any]) -> str:
    """How a step ended: accepted, refused on a check target, (early-)rejected by the gate, or
    nothing to gate."""
    if record.get("accepted"):
        return "accepted"
    for check in record.get("check_targets") or []:
        if isinstance(check, dict) and check.get("verdict") == "refused":
            return str(check.get("reason") or "refused on a check target")
    if record.get("early_rejected"):
        return "early-rejected"
    if record.get("stall_reason"):
        return "could not learn"
    return "rejected" if record.get("gate_evaluated") else "no edit applied"


__all__ = ["fmt", "verdict"]
