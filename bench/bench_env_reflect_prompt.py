"""How big is the optimizer's prompt when it reflects on failed TextWorldExpress episodes?

Plays real Pecking Order train episodes (the real package and JVM) with two scripted failing
players — ``repeat``: types "Read the instructions book" every turn (what the 1.5B does with no
skill), ``wander``: reads the book and obeys once, then types commands the game does not accept —
then runs the real ``reflect`` with a recording optimizer and counts the prompt it was sent, in
the 1.5B's own tokens (its GGUF's vocabulary only: no model compute), per minibatch size.

    .venv/bin/python bench/bench_env_reflect_prompt.py [--episodes 3] [--max-steps 12]
"""

from __future__ import annotations

import argparse
import asyncio
import re
from typing import Any

from skillgrad.benchmarks.textworld_express import TextWorldExpressTask
from skillgrad.models.catalog import Catalog
from skillgrad.testing import FunctionBackend, rules_reply, user_text
from skillgrad.train.reflect import ReflectConfig, reflect, render_trajectories
from skillgrad.types import ChatRequest, Trajectory

PREFILL_1_5B = 83.0  # tokens/s, idle machine, 2 threads (docs: embedded-model.md)


def repeat(request: ChatRequest) -> str:
    return "Read the instructions book"


def wander(request: ChatRequest) -> str:
    said = re.search(r"task is to take the (\w+)", user_text(request))
    turns = sum(1 for m in request.messages if m.role == "assistant")
    if turns == 0:
        return "read instructions book"
    if said and turns == 1:
        return f"take {said.group(1)}"
    return "Pick up the next item from the list"


async def episodes(n: int, max_steps: int) -> list[Trajectory]:
    task = TextWorldExpressTask(game="peckingorder", n_train=n, max_steps=max_steps)
    try:
        items = task.load_split("train")
        players = [repeat, wander]
        return [
            await task.rollout(item, "", FunctionBackend(players[i % 2]))
            for i, item in enumerate(items)
        ]
    finally:
        task.close()


async def reflect_prompt(trajs: list[Trajectory], size: int) -> str:
    sent: list[str] = []

    def optimizer(request: ChatRequest) -> dict[str, Any]:
        sent.append("\n".join(m.content for m in request.messages))
        return rules_reply("Type commands in lower case.")

    cfg = ReflectConfig(size, 2, True, 0.6, 1, 320)
    await reflect(1, "", trajs[:size], FunctionBackend(optimizer), cfg)
    return sent[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=12)
    args = parser.parse_args()
    from llama_cpp import Llama

    path = Catalog.default().require("qwen2.5-coder-1.5b")
    vocab = Llama(str(path), vocab_only=True, verbose=False)

    def tokens(text: str) -> int:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    trajs = asyncio.run(episodes(args.episodes, args.max_steps))
    for t in trajs:
        view = render_trajectories([t])
        print(f"episode {t.item_id}: score {t.score.value:.2f}, view {tokens(view)} tokens")
    print("\nminibatch  prompt tokens  prefill at 83 tok/s")
    for size in range(1, len(trajs) + 1):
        n = tokens(asyncio.run(reflect_prompt(trajs, size)))
        print(f"{size:9d}  {n:13d}  {n / PREFILL_1_5B:6.1f} s")
    print("\none episode as the optimizer sees it:\n")
    print(render_trajectories(trajs[:1]))


if __name__ == "__main__":
    main()
