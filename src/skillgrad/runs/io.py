"""Atomic file writes (temp file, fsync, rename) and JSON / JSONL helpers.

Everything under a run directory is written through these functions, so a kill at any instant
leaves either the old or the new version of a file, never half of one. Every write passes through
``redact.redact_text``: a remembered API key never reaches disk, whatever carried it (the call
cache applies the same function to its rows), and through ``skill.text.valid_text``: text UTF-8
cannot encode (a lone surrogate) is written as U+FFFD, never a crash. Files are private (0600)
and the folders made for them too (0700); appends never follow a symlink.

JSON lines: one record per ``\\n``, and nothing else ends a line. ``json_line`` writes a record
with its text readable (``ensure_ascii=False``) but escapes U+2028, U+2029 and U+0085, which
``str.splitlines`` and some other tools take for line ends (JSON escapes the ASCII ones already);
``jsonl_lines`` is the one way every JSONL reader here splits, on ``\\n`` only, so a record
written by anything else with those characters raw still reads whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import skillgrad.safeparse as safeparse
from skillgrad.errors import RunDirError
from skillgrad.redact import redact_text
from skillgrad.skill.text import valid_data, valid_text
from skillgrad.types import to_json

PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700


def private_dirs(path: Path) -> None:
    """Create folder ``path`` and its missing parents, each 0700 (``mkdir(parents=True)`` gives
    the parents the umask's mode)."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR)


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of a private file (created 0600), never through a symlink (ELOOP)."""
    return os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, valid_text(redact_text(text)).encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a private temp file beside ``path``, fsync, rename over ``path`` (a
    symlink there is replaced, not followed). Text goes through ``atomic_write_text``."""
    private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_LINE_BREAKERS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"})


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON, its text readable (``ensure_ascii=False``) except the characters some
    readers take for line ends (see the module docstring): they are escaped."""
    return json.dumps(to_json(value), indent=indent, ensure_ascii=False).translate(_LINE_BREAKERS)


def json_line(row: Any) -> str:
    """One JSON-lines record, newline included."""
    return json_text(row) + "\n"


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON-lines text: split on ``\\n`` only (a ``\\r`` before it dropped)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_text(path, json_text(value, indent=2) + "\n")


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    atomic_write_text(path, "".join(json_line(r) for r in rows))


def append_jsonl(path: Path, row: Any) -> None:
    """Append one line and fsync. Readers skip a torn last line (see ``read_jsonl``)."""
    private_dirs(path.parent)
    fd = open_private(path, os.O_WRONLY | os.O_APPEND)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(valid_text(redact_text(json_line(row))))
        fh.flush()
        os.fsync(fh.fileno())


def read_text(path: Path) -> str:
    """A text file of a run directory exactly as written (``Path.read_text`` would turn a ``\\r``
    a model wrote into ``\\n``); text that is not UTF-8 is a RunDirError naming the file."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{path}: not UTF-8 text ({exc}); restore the file.") from exc


FRESH = "re-run with --fresh to start a new run directory"
"""How a run directory that cannot be resumed is left behind (``skillgrad train --fresh``)."""
RUN_FIX = f"Restore it from a backup, or {FRESH}."


def read_json(path: Path, default: Any = None, what: str = "", fix: str = RUN_FIX) -> Any:
    """The JSON in ``path`` (``default`` when absent); unreadable JSON is a RunDirError naming
    the file (and ``what`` it holds, when given) and how to get past it (``fix``: a run
    directory's by default)."""
    if not path.exists():
        return default
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        named = f"{what} is " if what else ""
        raise RunDirError(
            f"{path}: {named}not valid JSON ({exc}); the file was truncated or overwritten. {fix}"
        ) from exc


def read_jsonl(path: Path) -> list[Any]:
    """Read a JSONL file, ignoring a last line torn by a kill mid-write; any other unreadable
    line is a RunDirError naming the file and line."""
    if not path.exists():
        return []
    rows = []
    lines = jsonl_lines(read_text(path))
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1:
                break
            raise RunDirError(
                f"{path} line {i + 1}: not a JSON record ({exc.msg}); the file was edited or "
                "damaged. Restore it, or remove that line if it is not one of skillgrad's."
            ) from exc
    return rows


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts to dotted keys (lists are kept as JSON text)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        return {prefix: json.dumps(value, sort_keys=True)}
    return {prefix: value}


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines stream written by a process that may have been killed
    mid-write (an agent's event stream, the sandbox judge's verdict): lines that are not a JSON
    object — a torn last line, other output — are skipped, never an error. Their strings are
    valid UTF-8 (``skill.text.valid_data``)."""
    events = []
    for line in jsonl_lines(text):
        try:  # bounded: an agent's tool arguments nested 1,000 deep are skipped, not a crash
            event = safeparse.loads(line, max_chars=None)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(valid_data(event))
    return events


__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "append_jsonl",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "flatten",
    "json_line",
    "json_objects",
    "json_text",
    "jsonl_lines",
    "open_private",
    "private_dirs",
    "read_json",
    "read_jsonl",
    "read_text",
    "write_jsonl",
]
