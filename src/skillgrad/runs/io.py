"""Atomic file writes (temp file, fsync, rename) and JSON / JSONL helpers.

Everything under a run directory is written through these functions, so a kill at any instant
leaves either the old or the new version of a file, never half of one. Every write passes through
``redact.redact_text``: a remembered API key never reaches disk, whatever carried it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.redact import redact_text
from skillgrad.types import to_json


def atomic_write_text(path: Path, text: str) -> None:
    text = redact_text(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
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


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_text(path, json.dumps(to_json(value), indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    text = "".join(json.dumps(to_json(r), ensure_ascii=False) + "\n" for r in rows)
    atomic_write_text(path, text)


def append_jsonl(path: Path, row: Any) -> None:
    """Append one line and fsync. Readers skip a torn last line (see ``read_jsonl``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(redact_text(json.dumps(to_json(row), ensure_ascii=False)) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_json(path: Path, default: Any = None) -> Any:
    """The JSON in ``path`` (``default`` when absent); unreadable JSON is a RunDirError."""
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(
            f"{path}: not valid JSON ({exc}); the file was truncated or overwritten. "
            "Restore it from a backup, or re-run with --fresh to start a new run directory."
        ) from exc


def read_jsonl(path: Path) -> list[Any]:
    """Read a JSONL file, ignoring a last line torn by a kill mid-write; any other unreadable
    line is a RunDirError naming the file and line."""
    if not path.exists():
        return []
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{path}: not UTF-8 text ({exc}); restore the file.") from exc
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
    object — a torn last line, other output — are skipped, never an error."""
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


__all__ = [
    "append_jsonl",
    "atomic_write_json",
    "atomic_write_text",
    "flatten",
    "json_objects",
    "read_json",
    "read_jsonl",
    "write_jsonl",
]
