"""Exploration's sampling diversity: can a hotter retry leave the path it failed on?

``train.explore_temperature_step`` samples an item's later attempts hotter after an attempt
repeats an earlier failed one exactly. This bench asks whether heat can break such a lock. For
each exploration attempt of a run that was a repeat (``exploration.jsonl`` rows with
``"repeat": true``), it re-asks every turn of that attempt (the same messages up to the turn,
the attempt's own system prompt) ``--samples`` times with fresh seeds through the embedded
backend, at each temperature of ``--temperatures``, and reports per turn how often the recorded
reply comes back, and the chance that the whole path comes back (the product over turns: an
episode's later turns are asked on the recorded history, so this is the chance of the same
commands given the same answers, which a deterministic environment gives).

    flock /tmp/skillgrad-model.lock .venv/bin/python bench/bench_explore_diversity.py \\
        RUN_DIR --model qwen2.5-coder-1.5b --threads 1 --samples 8 --temperatures 0.7,1.3,2.0

Reads the run directory only; writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from skillgrad.models.llamacpp import LlamaCppBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Message


def repeats(run_dir: Path) -> list[dict[str, Any]]:
    """Every exploration attempt of the run that repeated an earlier failed one exactly."""
    out = []
    for path in sorted(run_dir.glob("steps/step_*/exploration.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("repeat"):
                out.append({**row, "step_dir": path.parent.name})
    return out


def turns(messages: list[dict[str, Any]]) -> list[tuple[tuple[Message, ...], str]]:
    """(the request of each assistant turn, the recorded reply)."""
    msgs = tuple(Message(m["role"], m["content"]) for m in messages)
    return [(msgs[:i], m.content.strip()) for i, m in enumerate(msgs) if m.role == "assistant"]


async def same_share(
    backend: LlamaCppBackend, request: tuple[Message, ...], reply: str, t: float, n: int
) -> float:
    """How often ``n`` fresh samples at temperature ``t`` give the recorded reply again."""
    same = 0
    for k in range(n):
        asked = ChatRequest(request, temperature=t, max_tokens=24, seed=7919 * (k + 1))
        got = await backend.complete(asked)
        same += got.text.strip().casefold() == reply.casefold()
    return same / n


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--temperatures", default="0.7,1.3,2.0")
    p.add_argument("--limit", type=int, default=3, help="repeated attempts measured, at most")
    args = p.parse_args()
    temps = [float(x) for x in args.temperatures.split(",")]
    backend = LlamaCppBackend(ModelSpec(model=args.model, n_ctx=8192, n_threads=args.threads))
    rows = repeats(args.run_dir)
    print(
        f"{len(rows)} repeated attempts in {args.run_dir}; measuring {min(len(rows), args.limit)}"
    )
    for row in rows[: args.limit]:
        played = turns(row["trajectory"]["messages"])
        print(f"\n{row['step_dir']} {row['item_id']} attempt {row['attempt']}"
              f" (recorded at temperature {row['temperature']}): {len(played)} turns")  # fmt: skip
        paths = {t: 1.0 for t in temps}
        for n, (request, reply) in enumerate(played, 1):
            shares = [await same_share(backend, request, reply, t, args.samples) for t in temps]
            for t, share in zip(temps, shares, strict=True):
                paths[t] *= share
            cells = "  ".join(f"T={t}: {s:.2f}" for t, s in zip(temps, shares, strict=True))
            print(f"  turn {n:2d} {reply[:32]!r:36} same reply  {cells}")
        cells = "  ".join(f"T={t}: {paths[t]:.3f}" for t in temps)
        print(f"  the whole path again               {cells}")


if __name__ == "__main__":
    asyncio.run(main())
