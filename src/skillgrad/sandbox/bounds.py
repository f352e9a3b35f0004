"""Bounds on every text that comes out of a box, each cut with a marker saying what was cut.

What a box prints, raises or writes is the untrusted code's to choose: without a bound, one
``raise ValueError("A" * 2_900_000)`` becomes megabytes in every trajectory, cache row and
optimizer prompt. Readers here never load more than their bound into memory; ``cut`` (one
implementation with the in-box scripts, which cannot import skillgrad) keeps the head and the
tail (where a traceback's last line is) around ``...[N characters cut]...``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Any

from skillgrad.sandbox.inbox.wire import cut

OUTPUT_CHARS = 8_000  # a program's stdout / stderr as kept in a result
ERROR_CHARS = 2_000  # one test's error, one error line
NAME_CHARS = 200  # one test's name


def tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, after a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"...[{len(text) - limit} characters cut]...\n" + text[len(text) - limit :]


def cut_strings(value: Any, limit: int) -> Any:
    """A copy of a JSON-like value with every string ``cut`` to ``limit`` characters (an agent's
    tool observations, arguments and messages, as its event stream gave them)."""
    if isinstance(value, str):
        return cut(value, limit)
    if isinstance(value, dict):
        return {k: cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(cut_strings(v, limit) for v in value)
    return value


def read_bounded(source: Path | IO[bytes], limit: int) -> str:
    """At most ``limit`` bytes of a file (its head and tail when longer, with a marker saying how
    many bytes were cut), decoded as UTF-8 with replacement."""
    with source.open("rb") if isinstance(source, Path) else contextlib.nullcontext(source) as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(0)
        if size <= limit:
            return fh.read(limit).decode("utf-8", errors="replace")
        half = limit // 2
        head = fh.read(half)
        fh.seek(size - half)
        tail = fh.read(half)
    text = head.decode("utf-8", errors="replace") + f"\n...[{size - 2 * half} bytes cut]...\n"
    return text + tail.decode("utf-8", errors="replace")


__all__ = [
    "ERROR_CHARS", "NAME_CHARS", "OUTPUT_CHARS", "cut", "cut_strings", "read_bounded", "tail",
]  # fmt: skip
