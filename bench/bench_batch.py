"""Embedded model: generated tokens/s with 1, 2, 4, 8 calls decoded together.

Each count N sends N distinct chat calls at once to one ``LlamaCppBackend`` (freshly loaded per
model, ``n_threads`` fixed) and times them from submission to the last reply: wall time, and the
decode thread's CPU time (with one llama.cpp thread that is all the model's work, however busy
the cores are, so tokens per CPU-second compare across loads). Every reply runs to its limit,
so a round generates ``N * tokens`` tokens. A warm-up round first (the shared system prompt is
then in the KV cache, and each call prefills only its ~15 own tokens). The load average is
printed beside each row: other programs on the cores slow every number.

    flock /tmp/skillgrad-model.lock .venv/bin/python bench/bench_batch.py \\
        --models qwen2.5-coder-0.5b qwen2.5-coder-1.5b --counts 1 2 4 8 --tokens 32 --threads 1

``--chunks 1 2 4 8`` instead times llama.cpp alone evaluating k tokens of one sequence per call,
the ceiling of a k-call batch on the same CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from skillgrad.models.llamacpp import LlamaCppBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Message

SYSTEM = "You are a patient teacher. Answer at length, in plain prose."
TOPICS = ["rivers", "volcanoes", "bees", "glaciers", "comets", "forests", "tides", "deserts"]


def request(i: int, tokens: int) -> ChatRequest:
    ask = f"Write a long essay about {TOPICS[i % len(TOPICS)]} (part {i // len(TOPICS) + 1})."
    return ChatRequest((Message("system", SYSTEM), Message("user", ask)), max_tokens=tokens)


async def round_of(backend: LlamaCppBackend, n: int, tokens: int) -> tuple[float, float, int, int]:
    """Wall and decode-thread CPU seconds, tokens generated and decode steps for ``n`` calls
    sent together."""
    steps, cpu = backend.decode_steps, backend.decode_cpu_s
    start = time.perf_counter()
    replies = await asyncio.gather(*(backend.complete(request(i, tokens)) for i in range(n)))
    seconds = time.perf_counter() - start
    generated = sum(r.usage.completion_tokens for r in replies)
    return seconds, backend.decode_cpu_s - cpu, generated, backend.decode_steps - steps


async def bench(model: str, counts: list[int], tokens: int, threads: int) -> None:
    spec = ModelSpec(model=model, n_ctx=2048, n_threads=threads)
    backend = LlamaCppBackend(spec)
    await round_of(backend, max(counts), 4)  # warm-up: the shared prefix is then cached
    base = base_cpu = 0.0
    for n in counts:
        load = os.getloadavg()[0]
        seconds, cpu, generated, steps = await round_of(backend, n, tokens)
        rate, cpu_rate = generated / seconds, generated / cpu
        base, base_cpu = base or rate, base_cpu or cpu_rate
        print(
            f"{model} | {n} | {generated} | {steps} | {seconds:.1f} s | {rate:.1f} | "
            f"{rate / base:.2f}x | {cpu_rate:.1f} | {cpu_rate / base_cpu:.2f}x | {load:.1f}",
            flush=True,
        )


def chunk_rates(model: str, threads: int, chunks: list[int]) -> None:
    """llama.cpp alone: tokens per CPU-second evaluating k tokens of one sequence per
    ``llama_decode`` (a prefill in chunks of k): the ceiling of a k-call batch on this CPU."""
    from llama_cpp import Llama

    from skillgrad.models.llamacpp import model_file

    path = model_file(ModelSpec(model=model))
    llm = Llama(
        model_path=str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False
    )
    text = " ".join(f"{TOPICS[i % len(TOPICS)]} are part of nature." for i in range(120))
    tokens = llm.tokenize(text.encode("utf-8"))[:600]
    for k in chunks:
        llm.reset()
        llm.eval(tokens[:100])
        done, cpu = 0, time.thread_time()
        while done < 64:
            llm.eval(tokens[100 + done : 100 + done + k])
            done += k
        rate = done / (time.thread_time() - cpu)
        print(f"{model} | chunk {k} | {rate:.1f} tokens/CPU-s | load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b"])
    parser.add_argument("--counts", nargs="+", type=int, default=[1, 2, 4, 8])
    parser.add_argument("--tokens", type=int, default=48, help="generated tokens per call")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--chunks", nargs="+", type=int, help="instead: llama.cpp alone, k tokens of one sequence"
    )
    args = parser.parse_args()
    if args.chunks:
        for model in args.models:
            chunk_rates(model, args.threads, args.chunks)
        return
    print(
        "model | calls | tokens | decode steps | wall | tokens/s | vs 1 | tokens/CPU-s | vs 1 "
        "| load avg (1 min)"
    )
    for model in args.models:
        asyncio.run(bench(model, args.counts, args.tokens, args.threads))


if __name__ == "__main__":
    main()
