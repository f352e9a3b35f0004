"""The content-addressed call cache and ledger (stdlib sqlite3, one file per run directory).

``calls``: one row per model call actually paid for, keyed by a hash of (backend name, request).
The row is both the cache entry (the response) and the ledger line (role, stage, step, tokens,
cost), written in one transaction, so a resumed run replays paid calls for free and its
per-step accounting equals an uninterrupted run's.

``totals``: calls, tokens and cost per (role, stage, step), updated in the same transaction as
each new ``calls`` row, so budget checks and progress bars cost the same at call 30,000 as at
call 1 (``totals()`` without a filter reads an in-memory mirror of it).

``results``: per-(skill hash, item id) scored trajectories, so a skill is never re-run on an item
it has already been scored on. They are the main target's; another target's
(``train.check_targets``) go through ``TargetResults``, whose keys name that target, so two
targets never share an entry.

A file that is not a readable SQLite database is a RunDirError naming it, never a traceback.
Every row passes through ``redact.redact_text`` and ``skill.text.valid_text`` (as every file
does, ``runs/io.py``), and what a call or a rollout returns to the loop is the row as stored: a
resumed run sees exactly what the uninterrupted one saw, and a key a server echoed is ``***`` in
both. The file is 0600 (SQLite gives its ``-wal`` and ``-shm`` files the same mode) and is never
opened through a symlink.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import stat
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from skillgrad.errors import RunDirError
from skillgrad.redact import redact_text
from skillgrad.runs.io import PRIVATE_FILE, open_private, private_dirs
from skillgrad.skill.text import valid_text
from skillgrad.types import ChatRequest, Completion, Trajectory, to_json

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, backend TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL,
    role TEXT, stage TEXT, step INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER,
    cost REAL, latency_s REAL, created REAL
);
CREATE TABLE IF NOT EXISTS totals (
    role TEXT NOT NULL, stage TEXT NOT NULL, step INTEGER NOT NULL, calls INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cost REAL NOT NULL,
    PRIMARY KEY (role, stage, step)
);
CREATE TABLE IF NOT EXISTS results (
    skill_hash TEXT NOT NULL, item_id TEXT NOT NULL, trajectory TEXT NOT NULL,
    PRIMARY KEY (skill_hash, item_id)
);
"""


def call_key(backend: str, request: ChatRequest) -> str:
    """Content address of a call: provider, model, messages, parameters and seed (text that
    UTF-8 cannot encode hashed as ``valid_text`` makes it: the key of a valid request is
    unchanged)."""
    payload = json.dumps(
        {"backend": backend, "request": request.cache_payload()}, sort_keys=True, ensure_ascii=False
    )
    try:
        data = payload.encode("utf-8")
    except UnicodeEncodeError:
        data = valid_text(payload).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


_ZERO = {"calls": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0, "cost": 0.0}
_REBUILD_TOTALS = """
DELETE FROM totals;
INSERT INTO totals SELECT COALESCE(role, ''), COALESCE(stage, ''), COALESCE(step, 0), COUNT(*),
    COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost), 0)
    FROM calls GROUP BY 1, 2, 3;
"""
_TOTALS_BY_ROLE = (
    "SELECT role, SUM(calls), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost) "
    "FROM totals {where} GROUP BY role"
)


def _private_database(path: Path) -> bool:
    """Create ``path`` 0600 (an existing one of ours, with its -wal and -shm files, is made
    0600), never through a symlink (OSError); whether it held data already."""
    private_dirs(path.parent)
    try:
        fd = open_private(path, os.O_RDWR)
    except PermissionError:  # another user's ledger, read by report or sweep
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if info.st_uid == os.geteuid():
            os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if os.path.lexists(side):
            found = os.lstat(side)
            if stat.S_ISLNK(found.st_mode):
                raise OSError(errno.ELOOP, "a symlink", str(side))
            if found.st_uid == os.geteuid():
                side.chmod(PRIVATE_FILE)
    return info.st_size > 0


def _stored(data: Any) -> tuple[str, bool]:
    """The JSON text of a row, secrets redacted and made valid UTF-8 (as every file write does),
    and whether that changed it."""
    text = json.dumps(to_json(data), ensure_ascii=False)
    clean = valid_text(redact_text(text))
    return clean, clean != text


_SELECT_RESULT = "SELECT trajectory FROM results WHERE skill_hash=? AND item_id=?"
"""One stored result: ``CallCache.get_result`` and the read-only ``stored_result``."""


class CallCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            existed = _private_database(path)
        except OSError as exc:
            raise RunDirError(
                f"{path}: cannot open the call ledger ({exc.strerror or exc}); it must be a "
                "regular file (not a symlink) that this user can write."
            ) from exc
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout=10000")
            # the key index of a long run (~80 bytes a call) outgrows sqlite's 2 MB default page
            # cache; 16 MB holds it for ~100k calls (bench/bench_overhead.py)
            self._db.execute("PRAGMA cache_size=-16000")
            if existed:
                bad = self._db.execute("PRAGMA quick_check").fetchone()[0]
                if bad != "ok":
                    raise sqlite3.DatabaseError(bad)
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a committed call survives a killed process (what resume needs)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._sync_totals()
            self._all = self._by_role_from_db()
        except sqlite3.DatabaseError as exc:
            raise corrupt_ledger(path, exc) from exc

    def _sync_totals(self) -> None:
        """Rebuild ``totals`` from ``calls`` when they disagree (a ledger of an older version)."""
        self._db.execute("BEGIN")  # one snapshot for both counts
        try:
            counted = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(cost), 0) FROM calls"
            ).fetchone()
            summed = self._db.execute(
                "SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(cost), 0) FROM totals"
            ).fetchone()
        finally:
            self._db.execute("COMMIT")
        if counted[0] != summed[0] or abs(counted[1] - summed[1]) > 1e-9:
            self._db.executescript(f"BEGIN IMMEDIATE; {_REBUILD_TOTALS} COMMIT;")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        return Completion.from_json({**json.loads(row[0]), "cached": True})

    def put(
        self,
        key: str,
        backend: str,
        request: ChatRequest,
        completion: Completion,
        *,
        role: str = "",
        stage: str = "",
        step: int = 0,
        cost: float = 0.0,
        latency_s: float = 0.0,
    ) -> Completion:
        """Record a paid call: cache entry, ledger line and running totals in one transaction.
        Returns the completion as stored (secrets redacted): what the caller must use."""
        response, changed = _stored(completion)
        req, _ = _stored(request.cache_payload())
        p, c = completion.usage.prompt_tokens, completion.usage.completion_tokens
        row = (key, backend, req, response, role, stage, step, p, c, cost, latency_s, time.time())
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cur = self._db.execute(
                    "INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", row
                )
                new = cur.rowcount == 1
                if new:
                    self._db.execute(
                        "INSERT INTO totals VALUES (?,?,?,1,?,?,?) ON CONFLICT (role, stage, step) "
                        "DO UPDATE SET calls=calls+1, prompt_tokens=prompt_tokens+excluded."
                        "prompt_tokens, completion_tokens=completion_tokens+excluded."
                        "completion_tokens, cost=cost+excluded.cost",
                        (role, stage, step, p, c, cost),
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            if new:
                for rec in (self._all.setdefault(role or "unknown", dict(_ZERO)), self._all["all"]):
                    rec["calls"] += 1
                    rec["prompt_tokens"] += p
                    rec["completion_tokens"] += c
                    rec["cost"] += cost
        return Completion.from_json(json.loads(response)) if changed else completion

    def totals(self, where: str = "", args: tuple[Any, ...] = ()) -> dict[str, dict[str, float]]:
        """Calls, tokens and cost per role (plus ``"all"``), optionally filtered by SQL on the
        ``role``, ``stage`` and ``step`` columns. Unfiltered, it costs O(1) whatever the ledger's
        size (this process is the run directory's only writer: see ``runs/lock.py``)."""
        if not where:
            with self._lock:
                return {role: dict(rec) for role, rec in self._all.items()}
        return self._by_role_from_db(where, args)

    def _by_role_from_db(
        self, where: str = "", args: tuple[Any, ...] = ()
    ) -> dict[str, dict[str, float]]:
        sql = _TOTALS_BY_ROLE.format(where=f"WHERE {where}" if where else "")
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        out: dict[str, dict[str, float]] = {}
        total = dict(_ZERO)
        for role, n, p, c, cost in rows:
            rec = {
                "calls": float(n),
                "prompt_tokens": float(p or 0),
                "completion_tokens": float(c or 0),
                "cost": float(cost or 0.0),
            }
            out[role or "unknown"] = rec
            for k in total:
                total[k] += rec[k]
        out["all"] = total
        return out

    def by_stage(self) -> dict[str, dict[str, float]]:
        """Calls, tokens and cost per (role, stage), keyed ``"role/stage"``."""
        sql = (
            "SELECT role, stage, SUM(calls), SUM(prompt_tokens + completion_tokens), SUM(cost) "
            "FROM totals GROUP BY role, stage ORDER BY role, stage"
        )
        with self._lock:
            rows = self._db.execute(sql).fetchall()
        return {
            f"{role}/{stage}": {"calls": float(n), "tokens": float(tok or 0), "cost": float(c or 0)}
            for role, stage, n, tok, c in rows
        }

    def mark(self) -> dict[str, int]:
        """Where the ledger stands: ``{"rows": n, "max_rowid": r}`` (rows are only appended)."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                rowid = self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM calls").fetchone()
                rows = self._db.execute("SELECT COALESCE(SUM(calls), 0) FROM totals").fetchone()
            finally:
                self._db.execute("COMMIT")
        return {"rows": int(rows[0]), "max_rowid": int(rowid[0])}

    def rows_up_to(self, max_rowid: int) -> int:
        """How many ledger rows have a rowid up to ``max_rowid`` (checked against a mark)."""
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM calls WHERE rowid <= ?", (max_rowid,)
            ).fetchone()
        return int(row[0])

    def keys(self) -> set[str]:
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT key FROM calls")}

    def get_result(self, skill_hash: str, item_id: str) -> Trajectory | None:
        with self._lock:
            row = self._db.execute(
                _SELECT_RESULT, (valid_text(skill_hash), valid_text(item_id))
            ).fetchone()
        return Trajectory.from_json(json.loads(row[0])) if row else None

    def evidence(self) -> list[tuple[str, str]]:
        """(result id, evidence) of every stored result whose scorer gave evidence (the
        verifier-leak firewall, ``train/screens/firewall.py``); result ids as stored (``#s<k>``)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT item_id, json_extract(trajectory, '$.score.evidence') FROM results "
                "WHERE json_extract(trajectory, '$.score.evidence') <> ''"
            ).fetchall()
        return [(str(i), str(e)) for i, e in rows if e]

    def put_result(self, trajectory: Trajectory) -> Trajectory:
        """Store a scored trajectory; returns it as stored (secrets redacted)."""
        data, changed = _stored(trajectory)
        key = (valid_text(trajectory.skill_hash), valid_text(trajectory.item_id))
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO results VALUES (?,?,?)", (*key, data))
        return Trajectory.from_json(json.loads(data)) if changed else trajectory


class ResultStore(Protocol):
    """Where scored trajectories are cached per (skill hash, item id): a ``CallCache`` (the main
    target's entries) or a ``TargetResults`` view (another target's)."""

    def get_result(self, skill_hash: str, item_id: str) -> Trajectory | None: ...

    def put_result(self, trajectory: Trajectory) -> Trajectory:
        """Store a scored trajectory; return it as stored (secrets redacted)."""
        ...


def sample_key(item_id: str, sample: int) -> str:
    """The ``results`` id of one sample of an item: the item id itself for sample 0."""
    return item_id if sample == 0 else f"{item_id}#s{sample}"


def target_key(target: str, skill_hash: str) -> str:
    """The ``results`` key of (another target, skill): a hash of both, the same length as a
    skill hash (sha256 prefix), so it can equal neither a skill hash nor another target's key
    short of a hash collision."""
    return hashlib.sha256(f"target:{target}\n{skill_hash}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TargetResults:
    """The ``results`` of one other target (a check target) inside the run's store: entries
    keyed ``target_key(target, skill hash)``; trajectories come back with their real skill
    hash, as the main target's do."""

    store: CallCache
    target: str

    def get_result(self, skill_hash: str, item_id: str) -> Trajectory | None:
        found = self.store.get_result(target_key(self.target, skill_hash), item_id)
        return None if found is None else replace(found, skill_hash=skill_hash)

    def put_result(self, trajectory: Trajectory) -> Trajectory:
        key = target_key(self.target, trajectory.skill_hash)
        stored = self.store.put_result(replace(trajectory, skill_hash=key))
        return replace(stored, skill_hash=trajectory.skill_hash)


def stored_result(path: Path, skill_hash: str, item_id: str) -> Trajectory | None:
    """The result stored for (``skill_hash``, ``item_id``), read through a read-only connection:
    a viewer (``skillgrad trace``) beside a live run neither writes the ledger nor creates one.
    A missing or unreadable file, or a damaged row, is a RunDirError naming it."""
    if not path.is_file() or path.is_symlink():
        raise RunDirError(
            f"{path}: no call ledger here; the run has not scored anything yet, or this is not "
            "a run directory"
        )
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            db.execute("PRAGMA busy_timeout=10000")
            row = db.execute(_SELECT_RESULT, (skill_hash, item_id)).fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise corrupt_ledger(path, exc) from exc
    if row is None:
        return None
    try:
        return Trajectory.from_json(json.loads(row[0]))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise RunDirError(
            f"{path}: the stored result of {item_id!r} under skill {skill_hash} is damaged "
            f"({type(exc).__name__}: {exc}); remove the file to score it again (its calls are "
            "paid again)"
        ) from exc


def corrupt_ledger(path: Path, exc: Exception) -> RunDirError:
    return RunDirError(
        f"{path}: the call ledger is not a readable SQLite database ({exc}). Restore it from a "
        "backup and re-run, or start over with --fresh (calls it recorded would be paid again)."
    )


__all__ = [
    "CallCache",
    "ResultStore",
    "TargetResults",
    "call_key",
    "corrupt_ledger",
    "sample_key",
    "stored_result",
    "target_key",
]
