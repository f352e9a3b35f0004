"""Target calls per gate decision: the gate (lossless early rejection) vs a full re-roll of the
validation split, at identical decisions.

For every decision the candidate is gated twice on fresh result caches: once by the gate as
training runs it (``early_stop=True``) and once by a full evaluation of every (item, sample)
(``early_stop=False``); the two decisions must agree (the bench fails otherwise), and the ratio
is the gate's target calls over the full re-roll's. The incumbent's per-item scores are cached
(as in training: it was scored in full when it became the incumbent) and cost neither side.

Scenarios:

- ``fakes``: the toy task with a fake target (``skillgrad.testing``); an incumbent that passes
  a share ``--baseline`` of ``--val`` items, and ``--decisions`` seeded candidates that each
  break a passed item with probability ``--p-break`` and fix a failed one with ``--p-fix``
  (most candidates of a real run are rejected; a few improve);
- ``quickstart``: the quickstart task on the embedded model (SmolLM2-135M, llama.cpp, in
  process), its 12 validation items, hand-written candidate skills gated against two
  incumbents (the empty initial skill and a one-line format rule).

    python bench/bench_gate.py --scenario fakes --rule strict
    python bench/bench_gate.py --scenario fakes --rule paired
    python bench/bench_gate.py --scenario quickstart --rule strict
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillgrad.models.base import ModelBackend
from skillgrad.runs.cache import CallCache
from skillgrad.tasks.base import Task
from skillgrad.testing import FunctionBackend, ToyTask, system_text, user_text
from skillgrad.train.gate import GateRule, gate
from skillgrad.train.rollout import score_items
from skillgrad.types import ChatRequest, Completion, Item


class Counted:
    """Counts the calls that reach the model."""

    def __init__(self, inner: ModelBackend) -> None:
        self.inner, self.calls = inner, 0

    async def complete(self, request: ChatRequest) -> Completion:
        self.calls += 1
        return await self.inner.complete(request)


def previous_gate_calls(
    items: Sequence[Item], inc: dict[str, float], cand: dict[str, float], chunk: int
) -> int:
    """Calls the gate before this change made (strict only): items in split order, chunks of
    ``rollout_workers`` (4), stop when ``sum so far + remaining <= incumbent sum``."""
    bar = sum(inc.values())
    total, done, got = len(items), 0, 0.0
    for start in range(0, total, chunk):
        part = items[start : start + chunk]
        done += len(part)
        got += sum(cand[i.id] for i in part)
        if done < total and got + (total - done) <= bar + 1e-9:
            break
    return done


async def decision(
    task: Task,
    items: Sequence[Item],
    incumbent: str,
    candidate: str,
    backend: ModelBackend,
    rule: GateRule,
    samples: int,
    workers: int,
) -> tuple[bool, int, int, int]:
    """(accepted, gate calls, full re-roll calls, previous gate's calls) for one candidate;
    the gate's decision is checked equal to the full evaluation's."""
    results: list[tuple[bool, int]] = []
    previous = 0
    with tempfile.TemporaryDirectory() as tmp:
        inc_store = CallCache(Path(tmp) / "incumbent.sqlite")
        inc = await score_items(
            task, items, incumbent, backend, samples=samples, workers=workers, store=inc_store
        )
        inc_store.close()
        scores = {s.item_id: s for s in inc}
        for early in (True, False):
            store = CallCache(Path(tmp) / f"cand-{early}.sqlite")
            counted = Counted(backend)
            out = await gate(
                task,
                items,
                candidate,
                scores,
                counted,
                rule=rule,
                workers=workers,
                samples=samples,
                store=store,
                early_stop=early,
            )
            store.close()
            results.append((out.result.accepted, counted.calls))
            if not early and samples == 1:
                values = {i: s.value or 0.0 for i, s in out.candidate.items()}
                inc_values = {i: s.value or 0.0 for i, s in scores.items()}
                previous = previous_gate_calls(items, inc_values, values, 4)
    (acc_early, calls_early), (acc_full, calls_full) = results
    if acc_early != acc_full:
        raise SystemExit(f"LOSSY: early {acc_early} != full {acc_full} for {candidate[:60]!r}")
    return acc_early, calls_early, calls_full, previous


def fake_target(answers: dict[str, set[str]]) -> FunctionBackend:
    """Passes an item only if the skill's entry lists the item's word."""

    def reply(request: ChatRequest) -> str:
        word = user_text(request).removeprefix("Word: ")
        return word.upper() if word in answers.get(system_text(request), set()) else word

    return FunctionBackend(reply)


async def fakes(args: argparse.Namespace, rule: GateRule) -> list[tuple[bool, int, int, int]]:
    task = ToyTask(n_val=args.val)
    items = task.load_split("val")
    words = [i.input for i in items]
    rng = random.Random(args.seed)
    passed = set(rng.sample(words, round(args.baseline * len(words))))
    answers: dict[str, set[str]] = {"incumbent": passed}
    for d in range(args.decisions):
        cand = {w for w in passed if rng.random() >= args.p_break}
        cand |= {w for w in words if w not in passed and rng.random() < args.p_fix}
        answers[f"candidate {d}"] = cand
    target = fake_target(answers)
    return [
        await decision(task, items, "incumbent", f"candidate {d}", target, rule, args.samples, 4)
        for d in range(args.decisions)
    ]


QUICKSTART_CANDIDATES = [
    "Reply with exactly one word: positive or negative.",
    "# Sentiment\n\nAnswer with one lowercase word, positive or negative, and nothing else.",
    "Read the review and tell the user whether you liked it.",
    "# Rules\n\n- Summarise the review first.\n- Then give your opinion.",
    "Classify the sentiment. Output: positive | negative.",
    "When a review changes its mind, the ending decides. Reply positive or negative only.",
]
QUICKSTART_INCUMBENTS = ["", "Reply with one word."]


async def quickstart(args: argparse.Namespace, rule: GateRule) -> list[tuple[bool, int, int, int]]:
    from skillgrad.benchmarks.quickstart import QuickstartTask
    from skillgrad.models.llamacpp import LlamaCppBackend

    task = QuickstartTask(n_val=12)
    items = task.load_split("val")
    backend: Any = LlamaCppBackend()
    out = []
    for incumbent in QUICKSTART_INCUMBENTS:
        for cand in QUICKSTART_CANDIDATES:
            out.append(await decision(task, items, incumbent, cand, backend, rule, args.samples, 1))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", choices=["fakes", "quickstart"], default="fakes")
    p.add_argument("--rule", choices=["strict", "paired"], default="strict")
    p.add_argument("--confidence", type=float, default=0.9)
    p.add_argument("--samples", type=int, default=1)
    p.add_argument("--val", type=int, default=40)
    p.add_argument("--baseline", type=float, default=0.6)
    p.add_argument("--decisions", type=int, default=40)
    p.add_argument("--p-break", type=float, default=0.1)
    p.add_argument("--p-fix", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rule = GateRule(args.rule, args.confidence)
    start = time.perf_counter()
    run = fakes if args.scenario == "fakes" else quickstart
    rows = asyncio.run(run(args, rule))
    gate_calls = sum(r[1] for r in rows)
    full_calls = sum(r[2] for r in rows)
    accepted = sum(r[0] for r in rows)
    previous = sum(r[3] for r in rows)
    print(
        f"{args.scenario} rule={args.rule} samples={args.samples}: {len(rows)} decisions "
        f"({accepted} accepted), identical to full evaluation"
    )
    print(
        f"target calls per decision: gate {gate_calls / len(rows):.2f} vs full re-roll "
        f"{full_calls / len(rows):.2f} -> ratio {gate_calls / full_calls:.3f} "
        f"({time.perf_counter() - start:.1f} s)"
    )
    if args.samples == 1:
        print(
            f"previous gate (strict, split order, chunks of 4): {previous / len(rows):.2f} "
            f"calls per decision -> ratio {previous / full_calls:.3f}"
        )


if __name__ == "__main__":
    main()
