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


__all__ = ["fmt"]
