"""Embedded model: what reusing the KV cache of a shared skill prefix saves per rollout.

Runs the quickstart's validation items through ``LlamaCppBackend`` with a long skill (~600
tokens) in two orders: every call with the same skill back to back (what ``rollout`` does), and
alternating between two different skills of the same length (so every call re-reads its prefix).

    python bench/bench_embedded.py [--items 16] [--repeat-skill 12]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from skillgrad.benchmarks.quickstart import QuickstartTask
from skillgrad.models.llamacpp import LlamaCppBackend
from skillgrad.types import ChatRequest, Message

RULES = [
    "Reply with exactly one word: positive or negative.",
    "Never explain the answer and never repeat the review.",
    "Judge the overall sentiment; when a review changes its mind, the ending decides.",
]


def long_skill(tag: str, repeat: int) -> str:
    body = "\n".join(f"- ({tag}{i}) {RULES[i % len(RULES)]}" for i in range(repeat * 3))
    return f"# Sentiment ({tag})\n\n## Rules\n{body}\n"


async def timed(backend: LlamaCppBackend, skills: list[str], task: QuickstartTask, n: int) -> float:
    items = task.load_split("val")[:n]
    start = time.perf_counter()
    for i, item in enumerate(items):
        messages = (Message("system", skills[i % len(skills)]), Message("user", task.prompt(item)))
        await backend.complete(ChatRequest(messages, max_tokens=4))
    return (time.perf_counter() - start) / len(items)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--repeat-skill", type=int, default=12)
    args = parser.parse_args()
    backend = LlamaCppBackend()
    task = QuickstartTask(n_val=args.items)
    a, b = long_skill("a", args.repeat_skill), long_skill("b", args.repeat_skill)
    print(f"skill length: {backend.count_tokens(a)} tokens; {args.items} rollouts each")
    await timed(backend, [a], task, 2)  # warm-up
    same = await timed(backend, [a], task, args.items)
    alternating = await timed(backend, [a, b], task, args.items)
    print(f"same skill back to back : {same * 1000:7.0f} ms / rollout")
    print(f"alternating two skills  : {alternating * 1000:7.0f} ms / rollout")
    print(f"saved by prefix reuse   : {(1 - same / alternating) * 100:6.1f} %")


if __name__ == "__main__":
    asyncio.run(main())
