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


def p_text(p: float | None) -> str:
    """A p-value as text, four decimals; below what four decimals show, a bound (never
    ``p = 0``: an exact test's p is never 0); none: an en dash."""
    if p is None:
        return fmt(None)
    return "p < 0.0001" if p < 0.00005 else f"p = {fmt(float(p), 4)}"


__all__ = ["fmt", "p_text"]
