"""The seal of a checkpoint: what resume depends on, hashed when it was committed, checked on load.

``runtime_state.json`` is the commit point of a run. Next to the state it carries one more key,
``"_integrity"``, written in the same atomic write:

- ``state_sha256``: of the canonical JSON of the state itself (a state edited by hand, reduced to
  ``{}`` or written by anything but ``RunDir.checkpoint`` does not match);
- ``splits_sha256``: of ``splits.json`` (which items each split held when the run started; with
  ``data_sha256.json``, the sha256 of each split's items, a resume refuses changed data);
- ``patch_log``: line count and sha256 of ``patch_log.jsonl`` at the commit; lines after them
  belong to a step that was never committed and are dropped on resume;
- ``ledger``: rows and highest rowid of ``calls.sqlite`` at the commit; a resume finding fewer of
  those rows would silently pay every call again and restart the budget from zero.

Any mismatch is a RunDirError naming the file and what to do. A deliberate forger who recomputes
the hashes is out of scope: the seal defends results against accidents and careless edits.

``check_no_links``: skillgrad never makes a symlink in a run directory, so one where its own
files or folders should be (``events.jsonl`` or ``steps`` pointing outside) was planted, and
writing would append to or create files wherever it points. Any symlink under the root is a
RunDirError before anything is written or read (the root itself may be a link: the user named
it).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.runs.cache import corrupt_ledger
from skillgrad.runs.io import FRESH, atomic_write_json, atomic_write_text, read_json
from skillgrad.runs.layout import RunPaths
from skillgrad.types import to_json

INTEGRITY_KEY = "_integrity"
VERSION = 1


def check_no_links(root: Path) -> None:
    """Refuse a run directory holding a symlink anywhere under ``root`` (see the docstring)."""
    if not root.is_dir():
        return
    for folder, dirs, files in os.walk(root):  # never descends into a linked folder
        for name in sorted(dirs + files):
            path = Path(folder) / name
            if path.is_symlink():
                raise RunDirError(
                    f"{path} is a symlink (to {os.readlink(path)}), where the run directory "
                    f"keeps its own {'folder' if path.is_dir() else 'file'}; skillgrad never "
                    "makes one, and writing through it would write outside the run. Replace it "
                    f"with the real {'folder' if path.is_dir() else 'file'}, or {FRESH}."
                )


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_sha256(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return sha256_bytes(text.encode("utf-8"))


def _file_sha(path: Path) -> str | None:
    return sha256_bytes(path.read_bytes()) if path.exists() else None


def ledger_mark(path: Path) -> dict[str, int]:
    """Rows and highest rowid of the ledger at this instant (zeros when it does not exist yet)."""
    if not path.exists():
        return {"rows": 0, "max_rowid": 0}
    try:
        with _readonly(path) as db:
            db.execute("BEGIN")
            rowid = db.execute("SELECT COALESCE(MAX(rowid), 0) FROM calls").fetchone()[0]
            rows = db.execute("SELECT COALESCE(SUM(calls), 0) FROM totals").fetchone()[0]
    except sqlite3.Error as exc:
        raise corrupt_ledger(path, exc) from exc
    return {"rows": int(rows), "max_rowid": int(rowid)}


class _readonly:
    """A read-only connection that is closed on exit (sqlite3's own context manager is not)."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, *exc: object) -> None:
        self.db.close()


def seal(state: dict[str, Any], paths: RunPaths) -> dict[str, Any]:
    """``state`` plus its integrity record: what ``checkpoint`` writes to runtime_state.json."""
    log = paths.patch_log.read_bytes() if paths.patch_log.exists() else b""
    record = {
        "version": VERSION,
        "state_sha256": canonical_sha256(state),
        "splits_sha256": _file_sha(paths.splits),
        "patch_log": {"lines": log.count(b"\n"), "sha256": sha256_bytes(log)},
        "ledger": ledger_mark(paths.calls_db),
    }
    return {**state, INTEGRITY_KEY: record}


def read_state(paths: RunPaths) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The state and its integrity record from runtime_state.json (None when there is none).

    Raises RunDirError when the file is unreadable, has no integrity record or does not match it.
    """
    path = paths.state
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(
            f"{path}: the resume checkpoint is not valid JSON ({exc}); it was truncated or "
            f"overwritten. Restore it from a backup, or {FRESH}."
        ) from exc
    record = data.pop(INTEGRITY_KEY, None) if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(record, dict):
        raise RunDirError(
            f"{path}: the resume checkpoint has no integrity record, so it was not written by "
            f"skillgrad's checkpoint (edited by hand, or from an older version). Restore it, or "
            f"{FRESH}."
        )
    if record.get("state_sha256") != canonical_sha256(data):
        raise RunDirError(
            f"{path}: the resume checkpoint was modified after it was written (its content does "
            "not match its sha256); resuming would continue from a state training never reached. "
            f"Restore the file, or {FRESH}."
        )
    return data, record


def check_splits(paths: RunPaths, record: dict[str, Any]) -> None:
    if record.get("splits_sha256") != _file_sha(paths.splits):
        raise RunDirError(
            f"{paths.splits}: changed or removed since the run started (it records which items "
            f"each split holds, and resuming depends on it). Restore it, or {FRESH}."
        )


def committed_patch_log(paths: RunPaths, record: dict[str, Any]) -> bytes:
    """The lines of patch_log.jsonl the checkpoint committed; raises if they were altered.
    A missing log with nothing committed is recreated empty."""
    want = record.get("patch_log") or {}
    n = int(want.get("lines", 0))
    if n == 0 and not paths.patch_log.exists():
        atomic_write_text(paths.patch_log, "")
    data = paths.patch_log.read_bytes() if paths.patch_log.exists() else b""
    end = 0
    for _ in range(n):
        end = data.find(b"\n", end) + 1
        if end == 0:
            break
    head = data[:end] if n else b""
    if (n and end == 0) or sha256_bytes(head) != want.get("sha256"):
        raise RunDirError(
            f"{paths.patch_log}: its first {n} line(s), committed with the last checkpoint, were "
            "altered or removed; the provenance of the skill's edits would be wrong. Restore the "
            f"file, or {FRESH}."
        )
    return head


def _split_ids(data: Mapping[str, Sequence[Any]]) -> dict[str, list[str]]:
    return {split: [str(getattr(i, "id", "")) for i in items] for split, items in data.items()}


def _split_digests(data: Mapping[str, Sequence[Any]]) -> dict[str, str]:
    """sha256 per split of what decides results: each item's id, input and reference."""
    return {
        split: canonical_sha256([[i.id, to_json(i.input), to_json(i.reference)] for i in items])
        for split, items in data.items()
    }


def write_data_digest(paths: RunPaths, data: Mapping[str, Sequence[Any]]) -> None:
    """Record the data a new run starts from: ``splits.json`` (ids) and ``data_sha256.json``."""
    atomic_write_json(paths.splits, _split_ids(data))
    atomic_write_json(paths.data_digest, _split_digests(data))


def check_data(paths: RunPaths, data: Mapping[str, Sequence[Any]]) -> None:
    """A resumed run trains and tests on the items it started with, or it stops here."""
    stored = read_json(paths.splits)
    if stored is None:
        return  # killed before any item was recorded: nothing was scored yet
    if not isinstance(stored, dict):
        raise RunDirError(f"{paths.splits}: expected {{split: [item ids]}}; {FRESH}.")
    now = _split_ids(data)
    changed = []
    for split in sorted(set(stored) | set(now)):
        old, new = stored.get(split) or [], now.get(split, [])
        if list(old) != new:
            gone = sorted(set(old) - set(new))
            added = sorted(set(new) - set(old))
            changed.append(
                f"{split}: {len(old)} -> {len(new)} items; no longer present {gone[:5]}, "
                f"new {added[:5]}" + ("" if gone or added else " (same ids, new order)")
            )
    digests = read_json(paths.data_digest)
    if not changed and isinstance(digests, dict):
        now_digests = _split_digests(data)
        changed = [
            f"{split}: same ids, different inputs or references"
            for split in sorted(now_digests)
            if digests.get(split) != now_digests[split]
        ]
    if changed:
        raise RunDirError(
            f"{paths.root}: the task's data changed since this run started (recorded in "
            f"{paths.splits.name} and {paths.data_digest.name}):\n  "
            + "\n  ".join(changed)
            + "\nScores before and after the change would not be comparable. Restore the "
            f"original data to resume, or {FRESH}."
        )


def check_ledger(paths: RunPaths, record: dict[str, Any]) -> None:
    """The ledger still holds every call the checkpoint counted."""
    want = record.get("ledger") or {}
    rows, rowid = int(want.get("rows", 0)), int(want.get("max_rowid", 0))
    if rows == 0:
        return
    path = paths.calls_db
    have = 0
    if path.exists() and path.stat().st_size > 0:
        try:
            with _readonly(path) as db:
                sql = "SELECT COUNT(*) FROM calls WHERE rowid <= ?"
                have = db.execute(sql, (rowid,)).fetchone()[0]
        except sqlite3.Error as exc:
            raise corrupt_ledger(path, exc) from exc
    if have != rows:
        raise RunDirError(
            f"{path}: the call ledger holds {have} of the {rows} paid calls recorded at the last "
            "checkpoint (deleted, emptied or replaced). Resuming would pay those calls again and "
            f"restart the budget from zero. Restore calls.sqlite from a backup, or {FRESH}."
        )


__all__ = [
    "INTEGRITY_KEY",
    "canonical_sha256",
    "check_data",
    "check_ledger",
    "check_no_links",
    "check_splits",
    "committed_patch_log",
    "ledger_mark",
    "read_state",
    "seal",
    "sha256_bytes",
    "write_data_digest",
]
