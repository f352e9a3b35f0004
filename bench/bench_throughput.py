"""Throughput benchmark: N calls at a fixed injected latency through the full backend stack.

Starts ``tests/servers/fake_llm.py`` in a subprocess (so the server does not share this
process's GIL), sends N distinct chat calls through ``MeteredBackend(build_backend(spec))``
(openai_compatible; retry + endpoint limiter + cache/ledger in a temporary CallCache) at
concurrency C, and compares wall time with the ideal ``N * latency / C``. It also times the
wrapper stack alone (no network) to isolate the framework's own overhead per call.

    /work/venv/bin/python bench/bench_throughput.py --calls 1000 --latency 0.1 --concurrency 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from skillgrad.models.registry import aclose_backend, build_backend
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.metering import MeteredBackend
from skillgrad.models.wrappers.ratelimit import EndpointLimiter, LimitedBackend, LimiterRegistry
from skillgrad.models.wrappers.retry import RetryBackend
from skillgrad.runs.cache import CallCache
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Message

SERVER = Path(__file__).resolve().parents[1] / "tests" / "servers" / "fake_llm.py"


def request(i: int) -> ChatRequest:
    return ChatRequest(
        messages=(Message("system", "You are a benchmark."), Message("user", f"call number {i}")),
        max_tokens=16,
    )


def start_server(latency: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    return proc, int(line.split()[1])


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _timed(
    complete: Callable[[ChatRequest], Awaitable[Any]], calls: int, warmup: int, server_pid: int
) -> dict[str, float]:
    await asyncio.gather(*(complete(request(-1 - i)) for i in range(warmup)))  # open the pool
    cpu, server_cpu, started = _cpu_s(), _proc_cpu_s(server_pid), time.perf_counter()
    outs = await asyncio.gather(*(complete(request(i)) for i in range(calls)))
    wall = time.perf_counter() - started
    assert all(getattr(o, "text", None) or getattr(o, "choices", None) for o in outs)
    return {
        "wall_s": wall,
        "client_cpu_ms_per_call": 1000 * (_cpu_s() - cpu) / calls,
        "server_cpu_ms_per_call": 1000 * (_proc_cpu_s(server_pid) - server_cpu) / calls,
    }


def open_cache(path: Path, sync: str) -> CallCache:
    """The run's CallCache; ``sync`` other than NORMAL (skillgrad's setting) measures another
    fsync policy (``--sqlite-sync FULL``) without changing skillgrad itself."""
    cache = CallCache(path)
    if sync != "NORMAL":
        with cache._lock:
            cache._db.execute(f"PRAGMA synchronous={sync}")
    return cache


def _spec(port: int, concurrency: int) -> ModelSpec:
    return ModelSpec(
        provider="openai_compatible",
        model="bench",
        base_url=f"http://127.0.0.1:{port}/v1",
        max_concurrency=concurrency,
        timeout_s=30,
    )


async def run_sdk_only(port: int, calls: int, concurrency: int, pid: int) -> dict[str, float]:
    """Baseline: the bare SDK client behind a semaphore, none of our layers."""
    client = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0
    )
    slots = asyncio.Semaphore(concurrency)

    async def one(req: ChatRequest) -> Any:
        body = {"model": "bench", "messages": [m.to_openai() for m in req.messages]}
        async with slots:
            return await client.post("/chat/completions", cast_to=ChatCompletion, body=body)

    try:
        return await _timed(one, calls, concurrency, pid)
    finally:
        await client.close()


async def run_stack(
    port: int, calls: int, concurrency: int, pid: int, tmp: Path | None, sync: str = "NORMAL"
) -> dict[str, float]:
    """build_backend (retry + limiter + wire), plus MeteredBackend when ``tmp`` is given."""
    backend: Any = build_backend(_spec(port, concurrency), LimiterRegistry())
    cache = None
    if tmp is not None:
        cache = open_cache(tmp / "calls.sqlite", sync)
        backend = MeteredBackend(backend, cache, role="target")
    try:
        return await _timed(backend.complete, calls, concurrency, pid)
    finally:
        await aclose_backend(backend)
        if cache is not None:
            cache.close()


async def run_layers_only(calls: int, tmp: Path, sync: str) -> dict[str, float]:
    """Per-call cost of our wrappers over a zero-latency in-process backend (no network)."""
    raw = FunctionBackend(lambda r: "ok", name="function:bench")

    async def per_call(backend: Any, offset: int) -> float:
        started = time.perf_counter()
        for i in range(calls):
            await backend.complete(request(offset + i))
        return 1e6 * (time.perf_counter() - started) / calls

    bare = await per_call(raw, 0)
    wrapped = RetryBackend(LimitedBackend(raw, EndpointLimiter(8)), timeout_s=30)
    retry_limit = await per_call(wrapped, 0)
    cache = open_cache(tmp / "layers.sqlite", sync)
    metered = await per_call(MeteredBackend(wrapped, cache, role="target"), 10_000)
    cache.close()
    return {
        "bare_us": bare,
        "retry_limit_overhead_us": retry_limit - bare,
        "metered_overhead_us": metered - retry_limit,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--sqlite-sync", choices=["FULL", "NORMAL", "OFF"], default="NORMAL")
    args = parser.parse_args(argv)
    ideal = args.calls * args.latency / args.concurrency
    proc, port = start_server(args.latency)
    n, c = args.calls, args.concurrency
    results: dict[str, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results["sdk_only"] = asyncio.run(run_sdk_only(port, n, c, proc.pid))
            results["build_backend"] = asyncio.run(run_stack(port, n, c, proc.pid, None))
            sync = args.sqlite_sync
            results["metered"] = asyncio.run(run_stack(port, n, c, proc.pid, Path(tmp), sync))
            layers = asyncio.run(run_layers_only(n, Path(tmp), sync))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
    print(f"{n} calls, {args.latency * 1000:g} ms latency, concurrency {c}: ideal {ideal:.2f}s")
    for name, r in results.items():
        excess = 100 * (r["wall_s"] / ideal - 1)
        print(
            f"  {name:14s} wall {r['wall_s']:6.2f}s  (+{excess:5.1f}% vs ideal)  "
            f"client CPU {r['client_cpu_ms_per_call']:.2f} ms/call  "
            f"server CPU {r['server_cpu_ms_per_call']:.2f} ms/call"
        )
    print(
        f"  layers only (no network): bare {layers['bare_us']:.0f} us/call, retry+limit "
        f"+{layers['retry_limit_overhead_us']:.0f} us, metering (sqlite) "
        f"+{layers['metered_overhead_us']:.0f} us"
    )
    print(json.dumps({"args": vars(args), "ideal_s": ideal, **results, "layers": layers}))


if __name__ == "__main__":
    main()
