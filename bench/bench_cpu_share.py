"""Embedded models sharing the CPU: tokens/s and wall time, before and after the CPU slots.

Three scenarios, each timed after the models are loaded:
- ``one``: one model (the target) answering N calls in a row;
- ``pair``: the optimizer and the target in one process, each with its own stream of N calls
  at once (as the analysts and the rollout workers of a training step overlap);
- ``procs``: two processes at once, each running ``one`` (a sweep's local pool of 2 workers).

``--policy before`` runs the backend as it was before the CPU slots (every ``Llama`` with its
own lock, ``n_threads = min(4, cpu_count)`` and llama-cpp-python's default prompt threads =
every CPU); ``--policy after`` runs today's ``LlamaCppBackend``: by default each call takes the
free CPU slots (cores not busy elsewhere); ``--threads N`` sets ``n_threads`` = N (each call
waits for N slots: ``--threads 2`` on 2 cores = one model computing at a time, ``--threads 1``
= threads split, one per model). A scenario stops issuing calls after ``--max-seconds`` so a
collapsed arrangement cannot run for an hour.

    python bench/bench_cpu_share.py --policy before --scenario one pair procs
    python bench/bench_cpu_share.py --policy after --scenario one pair procs [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from skillgrad.models.catalog import Catalog
from skillgrad.models.llamacpp import LlamaCppBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Completion, Message, Usage

SYSTEM = (
    "You are a careful assistant. Follow these rules.\n"
    "- Answer in plain English, one item per line.\n"
    "- Number every item.\n"
    "- Keep each item under twelve words.\n"
    "- Never repeat an item; never add an introduction or a conclusion.\n"
)


class LegacyBackend:
    """The llama.cpp backend as it was before CPU slots (the ``before`` policy)."""

    def __init__(self, name: str) -> None:
        from llama_cpp import Llama

        self.name = name
        self._lock = threading.Lock()
        self._llm = Llama(
            model_path=str(Catalog.default().require(name)),
            n_ctx=2048,
            n_threads=max(1, min(4, os.cpu_count() or 1)),
            verbose=False,
            seed=0,
        )

    async def complete(self, request: ChatRequest) -> Completion:
        return await asyncio.to_thread(self._complete_sync, request)

    def _complete_sync(self, request: ChatRequest) -> Completion:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        with self._lock:
            out: Any = self._llm.create_chat_completion(
                messages=messages, temperature=0.0, max_tokens=request.max_tokens, seed=0
            )
        usage = out["usage"]
        text = out["choices"][0]["message"]["content"] or ""
        return Completion(text, Usage(usage["prompt_tokens"], usage["completion_tokens"]))


def build(name: str, policy: str, threads: int | None) -> Any:
    if policy == "before":
        return LegacyBackend(name)
    return LlamaCppBackend(ModelSpec(model=name, n_ctx=2048, n_threads=threads))


@dataclass
class Stream:
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    busy_s: float = 0.0


async def run_stream(backend: Any, stream: Stream, n: int, max_tokens: int, end: float) -> None:
    for i in range(n):
        if time.monotonic() > end:
            return
        ask = f"List {20 + i} everyday uses for a {['spoon', 'rope', 'jar', 'brick'][i % 4]}."
        req = ChatRequest((Message("system", SYSTEM), Message("user", ask)), max_tokens=max_tokens)
        start = time.monotonic()
        out = await backend.complete(req)
        stream.busy_s += time.monotonic() - start
        stream.calls += 1
        stream.prompt_tokens += out.usage.prompt_tokens
        stream.completion_tokens += out.usage.completion_tokens


async def scenario(names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    backends = [build(n, args.policy, args.threads) for n in names]
    if args.start_at:  # children of ``procs`` start computing at the same instant
        await asyncio.sleep(max(0.0, args.start_at - time.time()))
    streams = [Stream(n) for n in names]
    start = time.monotonic()
    end = start + args.max_seconds
    pairs = zip(backends, streams, strict=True)
    await asyncio.gather(*(run_stream(b, s, args.calls, args.max_tokens, end) for b, s in pairs))
    wall = time.monotonic() - start
    return {
        "wall_s": round(wall, 2),
        "completion_tokens": sum(s.completion_tokens for s in streams),
        "tokens_per_s": round(sum(s.completion_tokens for s in streams) / wall, 2),
        "streams": [
            {**s.__dict__, "tokens_per_s": round(s.completion_tokens / max(s.busy_s, 1e-9), 2)}
            for s in streams
        ],
    }


def two_processes(args: argparse.Namespace) -> dict[str, Any]:
    start_at = time.time() + args.load_s  # both have loaded their model by then
    cmd = [sys.executable, __file__, "--child", "--policy", args.policy, "--scenario", "one"]
    cmd += ["--calls", str(args.calls), "--max-tokens", str(args.max_tokens)]
    cmd += ["--max-seconds", str(args.max_seconds), "--start-at", str(start_at)]
    cmd += ["--target", args.target] + (["--threads", str(args.threads)] if args.threads else [])
    children = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    results = [json.loads(c.communicate()[0].strip().splitlines()[-1]) for c in children]
    wall = max(r["wall_s"] for r in results)
    tokens = sum(r["completion_tokens"] for r in results)
    return {"wall_s": wall, "completion_tokens": tokens,
            "tokens_per_s": round(tokens / wall, 2), "processes": results}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", choices=("before", "after"), required=True)
    parser.add_argument("--scenario", nargs="+", default=["one", "pair", "procs"])
    parser.add_argument("--target", default="qwen2.5-coder-0.5b")
    parser.add_argument("--optimizer", default="qwen2.5-coder-1.5b")
    parser.add_argument("--calls", type=int, default=4, help="calls per stream")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument("--threads", type=int, default=None, help="after: n_threads")
    parser.add_argument("--load-s", type=float, default=20.0, help="procs: time to load")
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in args.scenario:
        if name == "one":
            result = asyncio.run(scenario([args.target], args))
        elif name == "pair":
            result = asyncio.run(scenario([args.optimizer, args.target], args))
        else:
            result = two_processes(args)
        tag = {"scenario": name, "policy": args.policy, "threads": args.threads}
        print(json.dumps({**tag, **result, "load_avg_1m": round(os.getloadavg()[0], 2)}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
