"""Embedded model: prefill paid per step of interleaved multi-turn conversations.

Simulates N episodes of T turns, the shape of an environment rollout: a ~300-token system
prompt, then per turn an observation of 30-60 tokens as the user message and the model's reply
(an action of a few tokens) appended to the history. The episodes run through
``LlamaCppBackend`` with W of them in flight (``hardware.rollout_workers``), per mode:

- ``prefix``: ``options.kv_cache_mb: 0`` (only the previous call's token prefix is reused);
- ``sequences``: the default, one parked KV sequence per conversation (``kv_sequences``).

(llama-cpp-python's own ``LlamaRAMCache``, measured here before, no longer applies: the backend
decodes through the low-level API, not the library's cache hook; bench/README.md keeps its
numbers.)

It reports prompt tokens evaluated / sent and seconds per episode next to the physical limit:
each turn's new tokens at the model's prefill speed plus its reply at the generation speed, both
measured first in the same process. Replies are compared with those of the first mode run
(temperature 0: reuse must not change an answer).

    flock /tmp/skillgrad-model.lock .venv/bin/python bench/bench_conversations.py \\
        --model qwen2.5-coder-0.5b --episodes 4 --turns 8 --workers 1 4 \\
        --modes prefix sequences
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import dataclass

from skillgrad.models.llamacpp import LlamaCppBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Message

WORDS = (
    "kitchen hallway garden door north south east west table shelf drawer key book coin apple "
    "knife fridge counter window lamp chair box red blue green small large open closed wooden "
    "metal old new you see there is a an the on in under next to and with nothing else here"
).split()

RULES = [
    "Reply with exactly one command and nothing else.",
    "A command is a verb followed by an object, such as: take key, open door, go north.",
    "Read every observation before acting; it says what changed after your last command.",
    "Never repeat a command that the game did not accept; choose another verb instead.",
    "When the task names an object, find it first, then use it as the task asks.",
    "Prefer commands about objects the last observation mentions.",
]


def system_prompt(repeat: int) -> str:
    lines = [f"{i + 1}. {RULES[i % len(RULES)]}" for i in range(repeat)]
    return "You play a text game. Your rules:\n" + "\n".join(lines) + "\n"


def observation(episode: int, turn: int) -> str:
    rng = random.Random(episode * 1000 + turn)
    words = [rng.choice(WORDS) for _ in range(rng.randint(24, 44))]
    return f"Step {turn + 1}. " + " ".join(words) + "."


@dataclass
class Episode:
    replies: list[str]
    completion_tokens: int
    new_tokens: int  # the tokens each turn added to the history (the ideal prefill)


async def run_episode(backend: LlamaCppBackend, system: str, ep: int, turns: int) -> Episode:
    history = [Message("system", system)]
    replies: list[str] = []
    completion = new = previous = 0
    for turn in range(turns):
        history.append(Message("user", observation(ep, turn)))
        out = await backend.complete(ChatRequest(tuple(history), max_tokens=12, temperature=0.0))
        new += out.usage.prompt_tokens - previous
        previous = out.usage.prompt_tokens + out.usage.completion_tokens
        completion += out.usage.completion_tokens
        replies.append(out.text)
        history.append(Message("assistant", out.text))
    return Episode(replies, completion, new)


async def run_mode(
    backend: LlamaCppBackend, system: str, episodes: int, turns: int, workers: int
) -> tuple[float, list[Episode]]:
    gate = asyncio.Semaphore(workers)  # what rollout_workers does: W episodes in flight

    async def one(ep: int) -> Episode:
        async with gate:
            return await run_episode(backend, system, ep, turns)

    start = time.perf_counter()
    done = await asyncio.gather(*(one(ep) for ep in range(episodes)))
    return time.perf_counter() - start, list(done)


async def speeds(backend: LlamaCppBackend, system: str) -> tuple[float, float]:
    """Prefill and generation tokens/s, measured through the backend on fresh prompts."""
    before = backend.prefill.prompt_tokens_evaluated
    prompt = (Message("system", f"Session {random.random()}.\n" + system * 2),)
    start = time.perf_counter()
    await backend.complete(ChatRequest((*prompt, Message("user", "Go.")), max_tokens=1))
    prefill_s = time.perf_counter() - start
    evaluated = backend.prefill.prompt_tokens_evaluated - before
    ask = Message("user", "Write the numbers from 1 to 200, separated by commas.")
    start = time.perf_counter()
    out = await backend.complete(ChatRequest((*prompt, ask), max_tokens=96))
    gen_s = time.perf_counter() - start - 20 / (evaluated / prefill_s)  # ~20 new prompt tokens
    return evaluated / prefill_s, out.usage.completion_tokens / max(gen_s, 1e-6)


def build(model: str, mode: str, cap_mb: float) -> LlamaCppBackend:
    kv = cap_mb if mode == "sequences" else 0.0
    return LlamaCppBackend(ModelSpec(model=model, options={"kv_cache_mb": kv}))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument(
        "--modes", nargs="+", choices=["prefix", "sequences"], default=["prefix", "sequences"]
    )
    parser.add_argument("--cap-mb", type=float, default=256.0)
    parser.add_argument("--system-rules", type=int, default=24, help="~12 tokens each")
    args = parser.parse_args()
    system = system_prompt(args.system_rules)
    reference: list[list[str]] | None = None
    print("| mode | workers | evaluated / sent | s / episode | limit s / episode | same replies |")
    print("|---|---|---|---|---|---|")
    for mode in args.modes:
        for workers in args.workers:
            # a fresh model per run: the conversations repeat, and a warm cache would hit them
            backend = build(args.model, mode, args.cap_mb)
            prefill_tps, gen_tps = await speeds(backend, system)
            shared = backend.count_tokens(system)
            before = backend.prefill
            wall, eps = await run_mode(backend, system, args.episodes, args.turns, workers)
            after = backend.prefill
            sent = after.prompt_tokens_sent - before.prompt_tokens_sent
            evaluated = after.prompt_tokens_evaluated - before.prompt_tokens_evaluated
            # the physical limit: every new token evaluated once (the shared system prompt
            # once in all), every reply generated once
            new = sum(e.new_tokens for e in eps) - (len(eps) - 1) * shared
            limit = new / prefill_tps + sum(e.completion_tokens for e in eps) / gen_tps
            replies = [e.replies for e in eps]
            reference = reference or replies
            print(
                f"| {mode} | {workers} | {evaluated:,} / {sent:,} = {evaluated / sent:.2f} | "
                f"{wall / len(eps):.1f} | {limit / len(eps):.1f} | "
                f"{'yes' if replies == reference else 'NO'} |"
            )
            print(
                f"<!-- prefill {prefill_tps:.0f} tok/s, generation {gen_tps:.1f} tok/s; restored "
                f"{after.restored - before.restored}, parked {after.parked - before.parked}, "
                f"evicted {after.evicted - before.evicted}; ideal evaluated {new:,}; "
                f"wall {wall:.1f} s -->",
                flush=True,
            )
            del backend


if __name__ == "__main__":
    asyncio.run(main())
