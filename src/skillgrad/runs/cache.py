"""The content-addressed call cache and ledger (stdlib sqlite3, one file per run directory).

``calls``: one row per model call actually paid for, keyed by a hash of (backend name, request).
The row is both the cache entry (the response) and the ledger line (role, stage, step, tokens,
cost), written in one transaction, so a resumed run replays paid calls for free and its
per-step accounting equals an uninterrupted run's.

``results``: per-(skill hash, item id) scored trajectories, so a skill is never re-run on an item
it has already been scored on.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from skillgrad.types import ChatRequest, Completion, Trajectory, to_json

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, backend TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL,
    role TEXT, stage TEXT, step INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER,
    cost REAL, latency_s REAL, created REAL
);
CREATE TABLE IF NOT EXISTS results (
    skill_hash TEXT NOT NULL, item_id TEXT NOT NULL, trajectory TEXT NOT NULL,
    PRIMARY KEY (skill_hash, item_id)
);
"""


def call_key(backend: str, request: ChatRequest) -> str:
    """Content address of a call: provider, model, messages, parameters and seed."""
    payload = json.dumps(
        {"backend": backend, "request": request.cache_payload()}, sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CallCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a committed call survives a killed process (what resume needs)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

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
    ) -> None:
        response = json.dumps(to_json(completion), ensure_ascii=False)
        req = json.dumps(request.cache_payload(), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    key,
                    backend,
                    req,
                    response,
                    role,
                    stage,
                    step,
                    completion.usage.prompt_tokens,
                    completion.usage.completion_tokens,
                    cost,
                    latency_s,
                    time.time(),
                ),
            )

    def totals(self, where: str = "", args: tuple[Any, ...] = ()) -> dict[str, dict[str, float]]:
        """Calls, tokens and cost per role (plus ``"all"``), optionally filtered by SQL."""
        sql = (
            "SELECT role, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost) "
            f"FROM calls {('WHERE ' + where) if where else ''} GROUP BY role"
        )
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        out: dict[str, dict[str, float]] = {}
        total = {"calls": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0, "cost": 0.0}
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
            "SELECT role, stage, COUNT(*), SUM(prompt_tokens + completion_tokens), SUM(cost) "
            "FROM calls GROUP BY role, stage ORDER BY role, stage"
        )
        with self._lock:
            rows = self._db.execute(sql).fetchall()
        return {
            f"{role}/{stage}": {"calls": float(n), "tokens": float(tok or 0), "cost": float(c or 0)}
            for role, stage, n, tok, c in rows
        }

    def keys(self) -> set[str]:
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT key FROM calls")}

    def get_result(self, skill_hash: str, item_id: str) -> Trajectory | None:
        with self._lock:
            row = self._db.execute(
                "SELECT trajectory FROM results WHERE skill_hash=? AND item_id=?",
                (skill_hash, item_id),
            ).fetchone()
        return Trajectory.from_json(json.loads(row[0])) if row else None

    def put_result(self, trajectory: Trajectory) -> None:
        data = json.dumps(to_json(trajectory), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO results VALUES (?,?,?)",
                (trajectory.skill_hash, trajectory.item_id, data),
            )


__all__ = ["CallCache", "call_key"]
