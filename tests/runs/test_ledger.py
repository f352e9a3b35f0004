"""The ledger's running totals (issue 11 §5): kept in the same transaction as each paid call, so
budget checks and progress bars cost the same at call 20,000 as at call 1.

Reproduced before: ``Budget.check`` aggregated the whole ledger before every uncached call (and
the progress bar again per item); a 500-item rollout took 1.4 s early in a run and 7.6 s late.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from skillgrad.errors import BudgetExceeded
from skillgrad.models.context import call_context
from skillgrad.models.wrappers.metering import Budget, MeteredBackend, PriceTable
from skillgrad.runs.cache import CallCache
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Message


def _request(i: int) -> ChatRequest:
    return ChatRequest(messages=(Message("user", f"question {i}"),), max_tokens=8)


def _sql_totals(path: Path) -> dict[tuple[str, str, int], tuple[int, int, int, float]]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT role, stage, step, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), "
            "SUM(cost) FROM calls GROUP BY 1, 2, 3"
        ).fetchall()
    db.close()
    return {(r, s, st): (n, p, c, round(cost, 9)) for r, s, st, n, p, c, cost in rows}


def _table_totals(path: Path) -> dict[tuple[str, str, int], tuple[int, int, int, float]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT * FROM totals").fetchall()
    db.close()
    return {(r, s, st): (n, p, c, round(cost, 9)) for r, s, st, n, p, c, cost in rows}


async def test_totals_follow_every_paid_call_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    cache = CallCache(path)
    prices = PriceTable({"function:priced": (1.0, 2.0)})
    target = MeteredBackend(FunctionBackend(lambda r: "a b c", name="function:priced"), cache,
                            "target", prices)  # fmt: skip
    optimizer = MeteredBackend(FunctionBackend(lambda r: "x", name="function:opt"), cache,
                               "optimizer")  # fmt: skip
    for step in (1, 2):
        with call_context("rollout", step):
            for i in range(5):
                await target.complete(_request(i + 10 * step))
                await target.complete(_request(i + 10 * step))  # a cache hit: not paid again
        with call_context("reflect", step):
            await optimizer.complete(_request(step))
    assert _table_totals(path) == _sql_totals(path)
    live = cache.totals()
    assert live["all"]["calls"] == 12 and live["target"]["calls"] == 10
    step_cost = _sql_totals(path)[("target", "rollout", 1)][3]
    assert live["target"]["cost"] == pytest.approx(2 * step_cost)
    assert cache.totals("step=?", (2,))["all"]["calls"] == 6
    assert cache.by_stage()["optimizer/reflect"]["calls"] == 2
    cache.close()
    again = CallCache(path)
    reopened = again.totals()
    assert set(reopened) == set(live)
    assert all(reopened[role] == pytest.approx(live[role]) for role in live)
    again.close()


def test_a_ledger_without_totals_is_rebuilt_on_open(tmp_path: Path) -> None:
    """A ledger written before running totals existed (or whose totals were damaged)."""
    path = tmp_path / "calls.sqlite"
    CallCache(path).close()
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [(f"k{i}", "b", "{}", json.dumps({"text": "t"}), "target", "rollout", i % 3, 10, 2,
              0.5, 0.0, 0.0) for i in range(30)],
        )  # fmt: skip
        db.execute("DELETE FROM totals")
    db.close()
    cache = CallCache(path)
    assert cache.totals()["target"] == {
        "calls": 30.0, "prompt_tokens": 300.0, "completion_tokens": 60.0, "cost": 15.0
    }  # fmt: skip
    assert _table_totals(path) == _sql_totals(path)
    cache.close()


async def test_the_budget_counts_calls_of_earlier_processes(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    budget = Budget(max_calls=3)
    cache = CallCache(path)
    backend = MeteredBackend(FunctionBackend(lambda r: "ok"), cache, "target", budget=budget)
    for i in range(2):
        await backend.complete(_request(i))
    cache.close()
    cache = CallCache(path)  # a resumed run: the budget does not restart from zero
    backend = MeteredBackend(FunctionBackend(lambda r: "ok"), cache, "target", budget=budget)
    await backend.complete(_request(2))
    await backend.complete(_request(0))  # cached: free, allowed at the limit
    with pytest.raises(BudgetExceeded, match="max_calls=3 reached"):
        await backend.complete(_request(3))
    cache.close()


def _fill(path: Path, rows: int) -> None:
    CallCache(path).close()
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [(f"{i:064x}", "function:fake", json.dumps({"m": "x" * 400}),
              json.dumps({"text": "ok"}), "target", "rollout", i // 300, 10, 2, 0.0, 0.0, 0.0)
             for i in range(rows)],
        )  # fmt: skip
    db.close()


async def _per_call(path: Path, n: int, offset: int) -> float:
    cache = CallCache(path)
    budget = Budget(max_calls=10**9, max_tokens=10**12, max_cost_usd=1e9)
    backend = MeteredBackend(FunctionBackend(lambda r: "ok"), cache, "target", budget=budget)
    started = time.perf_counter()
    with call_context("rollout", 999):
        for i in range(n):
            await backend.complete(_request(offset + i))
            cache.totals()["all"]  # the progress bar's read after every item
    elapsed = time.perf_counter() - started
    cache.close()
    return elapsed / n


@pytest.mark.slow
async def test_per_call_cost_does_not_grow_with_the_ledger(tmp_path: Path) -> None:
    """Before: 20,000 rows made every uncached call aggregate the ledger twice (>10x slower)."""
    small, large = tmp_path / "small.sqlite", tmp_path / "large.sqlite"
    _fill(small, 500)
    _fill(large, 20_000)
    best = {
        p: min([await _per_call(p, 150, 10**6 * (r + 1)) for r in range(3)]) for p in (small, large)
    }
    assert best[large] < 2.0 * best[small], best
