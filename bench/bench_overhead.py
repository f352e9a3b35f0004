"""Per-call framework overhead at a small and a large ledger: it must not grow with the run.

Every model call of a run goes through ``MeteredBackend`` + ``CallCache``: cache lookup, budget
check, the call, ledger write, and the progress bar's read of the running totals. This bench
builds two ledgers through that real path (instant fake model, stages and steps varying like a
run's), then alternates timed rounds between them, each round on a fresh copy of its ledger so
it starts at exactly N rows, and reports the overhead per call (time per call minus the bare fake
model's) of the best round and the median round. Pass: best-round large / small <= 1.2 (the best
of several rounds is the standard estimate of a cost on a shared machine: load only adds time;
the median ratio is printed next to it).

    python bench/bench_overhead.py --small 1000 --large 30000 --calls 2000 --rounds 9

``--check`` exits 1 when the ratio is above ``--max-ratio``. For reference it also times what the
budget check cost before running totals: one aggregate over the whole ``calls`` table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillgrad.models.context import call_context
from skillgrad.models.wrappers.metering import Budget, MeteredBackend
from skillgrad.runs.cache import CallCache
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Message

STAGES = ("rollout", "reflect", "gate")
CALLS_PER_STEP = 300


def request(i: int) -> ChatRequest:
    return ChatRequest(
        messages=(
            Message("system", "You are a benchmark skill. " * 20),
            Message("user", f"item number {i}: answer with one word"),
        ),
        max_tokens=16,
    )


def model() -> FunctionBackend:
    return FunctionBackend(lambda r: "ok " * 8, name="function:bench")


async def calls(backend: MeteredBackend, start: int, n: int, progress: bool = True) -> None:
    """``n`` fresh calls numbered from ``start``, in a run's stage/step pattern."""
    for i in range(start, start + n):
        step = i // CALLS_PER_STEP
        with call_context(STAGES[step % len(STAGES)], step):
            await backend.complete(request(i))
        if progress:  # what the progress bar reads after every item
            backend.cache.totals()["all"]


def build_ledger(path: Path, rows: int) -> None:
    cache = CallCache(path)
    budget = Budget(max_calls=10**9, max_tokens=10**12, max_cost_usd=10**9)
    asyncio.run(calls(MeteredBackend(model(), cache, "target", budget=budget), 0, rows, False))
    cache.close()


def timed_round(template: Path, work: Path, rows: int, n: int) -> float:
    """Seconds per call for ``n`` fresh calls on a fresh copy of a ledger of ``rows`` rows."""
    shutil.copyfile(template, work)
    with work.open("rb+") as fh:  # else the first WAL checkpoint's fsync writes the whole copy
        os.fsync(fh.fileno())
    cache = CallCache(work)
    budget = Budget(max_calls=10**9, max_tokens=10**12, max_cost_usd=10**9)
    backend = MeteredBackend(model(), cache, "target", budget=budget)
    started = time.perf_counter()
    asyncio.run(calls(backend, rows, n))
    elapsed = time.perf_counter() - started
    cache.close()
    work.unlink()
    return elapsed / n


def bare_per_call(n: int) -> float:
    backend = model()

    async def go() -> None:
        for i in range(n):
            with call_context("rollout", 0):
                await backend.complete(request(i))

    started = time.perf_counter()
    asyncio.run(go())
    return (time.perf_counter() - started) / n


def full_scan(path: Path) -> float:
    """What Budget.check did per call before running totals: aggregate the whole ledger."""
    db = sqlite3.connect(path)
    started = time.perf_counter()
    for _ in range(20):
        db.execute(
            "SELECT role, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost) "
            "FROM calls GROUP BY role"
        ).fetchall()
    db.close()
    return (time.perf_counter() - started) / 20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=30000)
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--max-ratio", type=float, default=1.2)
    parser.add_argument("--check", action="store_true", help="exit 1 above --max-ratio")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        ledgers = {n: Path(tmp) / f"ledger_{n}.sqlite" for n in (args.small, args.large)}
        started = time.perf_counter()
        for n, path in ledgers.items():
            build_ledger(path, n)
        print(f"built ledgers of {sorted(ledgers)} rows in {time.perf_counter() - started:.1f}s")
        bare = bare_per_call(args.calls)
        per_call: dict[int, list[float]] = {n: [] for n in ledgers}
        for _ in range(args.rounds):  # alternate, so machine load drifts hit both alike
            for n, path in ledgers.items():
                per_call[n].append(timed_round(path, Path(tmp) / "work.sqlite", n, args.calls))
        scans = {n: full_scan(path) for n, path in ledgers.items()}
    overhead = {n: min(v) - bare for n, v in per_call.items()}
    median = {n: statistics.median(v) - bare for n, v in per_call.items()}
    print(f"bare fake model: {bare * 1e6:.0f} us/call; {args.calls} calls x {args.rounds} rounds")
    for n in ledgers:
        spread = ", ".join(f"{(v - bare) * 1e6:.0f}" for v in per_call[n])
        print(
            f"  ledger {n:>6} rows: overhead best {overhead[n] * 1e6:4.0f} us/call, median "
            f"{median[n] * 1e6:4.0f} (rounds: {spread}); whole-ledger aggregate (old check) "
            f"{scans[n] * 1e6:.0f} us"
        )
    ratio = overhead[args.large] / overhead[args.small]
    mratio = median[args.large] / median[args.small]
    verdict = "PASS" if ratio <= args.max_ratio else "FAIL"
    print(
        f"ratio {args.large} / {args.small} rows: best {ratio:.3f} ({verdict}, limit "
        f"{args.max_ratio}), median {mratio:.3f}"
    )
    return 1 if args.check and verdict == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
