"""Embedded model: prefill paid per step of real TextWorldExpress episodes, 1 or W in flight.

Plays a fixed set of episodes (the ``val`` split of ``configs/twx-peck.yaml``'s environment:
Pecking Order, free mode, at most 12 steps) through the path ``skillgrad eval`` takes —
``open_session`` (task, splits, the in-process llama.cpp target, metering into a call store)
and ``train.rollout.rollout`` with ``hardware.rollout_workers`` = W — once per worker count, each
on a freshly loaded model and a fresh, empty call store (nothing answered from a cache). The
optimizer is set to the target's model so the session loads one model.

Per run it reports the episodes, steps, prompt tokens sent and evaluated (the backend's own
counters, ``LlamaCppBackend.prefill``), seconds per episode and per step, and the physical limit:
each episode's distinct prompt tokens evaluated once (the shared skill prefix once in all) at the
prefill speed plus its generated tokens at the generation speed, both measured on the same
loaded model just before the run. Actions are compared with the first run's per episode
(temperature 0: reuse and scheduling must not change a move).

    flock /tmp/skillgrad-model.lock .venv/bin/python bench/bench_env_kv.py \\
        --models qwen2.5-coder-1.5b --episodes 8 --workers 1 4 \\
        --skills docs/hand-written-skills/twx-peck.md
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_conversations import speeds as conversation_speeds  # bench/ is on sys.path

from skillgrad.config import Config, load_config
from skillgrad.models.llamacpp import LlamaCppBackend, PrefillStats
from skillgrad.runs.cache import CallCache
from skillgrad.session import open_session
from skillgrad.skill.document import Skill
from skillgrad.train.rollout import rollout
from skillgrad.types import ChatRequest, Completion, Trajectory


@dataclass
class Calls:
    """Per episode (keyed by its first observation), the (prompt, completion) tokens of each
    call, recorded by a pass-through wrapper around the metered target."""

    by_episode: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    system: str = ""
    spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end) per call


class Recording:
    """Passes every call on unchanged and notes its usage under its episode."""

    def __init__(self, inner: Any, calls: Calls) -> None:
        self.inner, self.calls = inner, calls
        self.name = inner.name

    def __getattr__(self, attr: str) -> object:
        return getattr(self.inner, attr)

    async def complete(self, request: ChatRequest) -> Completion:
        start = time.perf_counter()
        out = await self.inner.complete(request)
        self.calls.spans.append((start, time.perf_counter()))
        first = next(m.content for m in request.messages if m.role == "user")
        self.calls.system = next((m.content for m in request.messages if m.role == "system"), "")
        usage = (out.usage.prompt_tokens, out.usage.completion_tokens)
        self.calls.by_episode.setdefault(first, []).append(usage)
        return out


def shared_prefix(calls: Calls, count: Any) -> int:
    """Tokens every episode's first prompt shares: the system prompt and the common start of
    the first observations (the chat template's few marker tokens left out)."""
    firsts = list(calls.by_episode)
    if not firsts:
        return 0
    lo, hi = min(firsts), max(firsts)  # the common prefix of all is that of these two
    n = next((i for i, (a, b) in enumerate(zip(lo, hi, strict=False)) if a != b), len(lo))
    return count(calls.system) + count(lo[:n])


def busy_seconds(spans: list[tuple[float, float]]) -> float:
    """Seconds the model computed: the backend runs one call at a time, so a call computes from
    its start or the previous call's end, whichever is later, to its own end."""
    busy, last = 0.0, float("-inf")
    for start, end in sorted(spans, key=lambda s: s[1]):
        busy += end - max(start, last)
        last = end
    return busy


def ideal_new_tokens(calls: list[tuple[int, int]]) -> int:
    """The prompt tokens an episode must evaluate at least: each call's tokens beyond the
    previous call's prompt and reply (the reply's own tokens are in the KV cache already)."""
    new = previous = 0
    for prompt, completion in calls:
        new += max(0, prompt - previous)
        previous = prompt + completion
    return new


async def speeds(backend: LlamaCppBackend, skill: str) -> tuple[float, float]:
    """Prefill and generation tokens/s of the freshly loaded model, on a fresh ~600-token
    prompt (the first quarter of a Pecking Order history) and 96 generated tokens: the same
    measurement as bench_conversations.py, with the episode's skill as the prompt's text."""
    filler = (skill or "Reply with one command per turn and nothing else.\n") * 12
    return await conversation_speeds(backend, filler[:1200])  # doubled there: 2,400 chars


@dataclass(frozen=True)
class Run:
    trajs: list[Trajectory]
    calls: Calls
    wall: float
    stats: PrefillStats  # this run's counts (after minus before)
    prefill_tps: float
    gen_tps: float
    parked_tps: tuple[float, float]  # the same, measured after the run (its episodes parked)
    shared: int  # tokens of the prefix every episode shares


def config_for(args: argparse.Namespace, model: str, workers: int, kv_mb: float | None) -> Config:
    spec: dict[str, Any] = {"provider": "llamacpp", "model": model, "temperature": 0.0}
    if args.threads:
        spec["n_threads"] = args.threads
    if kv_mb is not None:
        spec["options"] = {"kv_cache_mb": kv_mb}
    data = {
        "models": {"target": spec, "optimizer": spec},  # one model load
        "hardware": {"rollout_workers": workers},
        "env": {"options": {f"n_{args.split}": args.episodes}},
    }
    return load_config(args.config, data=data)


def delta(after: PrefillStats, before: PrefillStats) -> PrefillStats:
    keep = ("parked_bytes", "cap_bytes")
    return PrefillStats(
        **{
            k: getattr(after, k) - (0 if k in keep else getattr(before, k))
            for k in PrefillStats.__dataclass_fields__
        }
    )


async def play(cfg: Config, split: str, skill: str) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        store = CallCache(Path(tmp) / "calls.sqlite")
        try:
            session = open_session(cfg, store)
            try:
                raw = session.target.inner
                assert isinstance(raw, LlamaCppBackend), type(raw)
                prefill_tps, gen_tps = await speeds(raw, skill)
                calls = Calls()
                target = Recording(session.target, calls)
                before = raw.prefill
                start = time.perf_counter()
                trajs = await rollout(
                    session.task,
                    session.items[split],
                    skill,
                    target,
                    workers=cfg.hardware.rollout_workers,
                    store=store,
                )
                wall = time.perf_counter() - start
                stats = delta(raw.prefill, before)
                assert session.target.cache_hits == 0  # every call computed
                shared = shared_prefix(calls, raw.count_tokens)
                # every call attends over the parked cells too (docs/models.md): the speeds
                # again with the finished episodes still parked bound what the run could reach
                parked_tps = await speeds(raw, skill)
            finally:
                await session.aclose()
        finally:
            store.close()
    return Run(trajs, calls, wall, stats, prefill_tps, gen_tps, parked_tps, shared)


def actions(t: Trajectory) -> list[str]:
    return [s["action"] for s in t.steps if s.get("type") == "env_step"]


def row(label: str, run: Run, same: str) -> str:
    n = len(run.trajs)
    steps = sum(len(actions(t)) for t in run.trajs)
    solved = sum(t.score.passed for t in run.trajs)
    errors = sum(t.infra_error is not None for t in run.trajs)
    eps = list(run.calls.by_episode.values())
    ideal = sum(ideal_new_tokens(c) for c in eps) - max(0, len(eps) - 1) * run.shared
    generated = sum(c for calls in eps for _, c in calls)
    limit = ideal / run.prefill_tps + generated / run.gen_tps
    parked = ideal / run.parked_tps[0] + generated / run.parked_tps[1]
    s = run.stats
    ratio = s.prompt_tokens_evaluated / max(1, s.prompt_tokens_sent)
    cells = [
        label,
        f"{n} ({solved} solved{f', {errors} infra errors' if errors else ''})",
        str(steps),
        f"{s.prompt_tokens_sent:,}",
        f"{s.prompt_tokens_evaluated:,} (ideal {ideal:,})",
        f"**{ratio:.2f}**",
        f"{generated:,}",
        f"{run.prefill_tps:.0f} / {run.gen_tps:.1f} "
        + f"({run.parked_tps[0]:.0f} / {run.parked_tps[1]:.1f})",
        f"{run.wall / n:.1f} ({busy_seconds(run.calls.spans) / n:.1f})",
        f"{run.wall / max(1, steps):.2f}",
        f"{limit / n:.1f} ({parked / n:.1f})",
        same,
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| model, skill, kv, workers | episodes | steps | prompt tokens sent | evaluated | "
    "evaluated / sent | generated | prefill / gen tok/s | s / episode (model busy) | s / step | "
    "limit s / episode | same actions |"
)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/twx-peck.yaml")
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-1.5b"])
    parser.add_argument("--skills", nargs="+", default=["docs/hand-written-skills/twx-peck.md"])
    parser.add_argument("--split", default="val", choices=["train", "val", "test"])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument(
        "--kv-cache-mb",
        type=float,
        nargs="+",
        default=[-1.0],
        help="the target's options.kv_cache_mb per run (-1: the default; 0: prefix reuse only)",
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="the target's n_threads (0: the free cores)"
    )
    args = parser.parse_args()
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 2))
    for model in args.models:
        for skill_path in args.skills:
            skill = Skill.load(Path(skill_path)).text
            reference: dict[str, list[str]] | None = None
            for kv in args.kv_cache_mb:
                for workers in args.workers:
                    cfg = config_for(args, model, workers, None if kv < 0 else kv)
                    run = await play(cfg, args.split, skill)
                    moves = {t.item_id: actions(t) for t in run.trajs}
                    reference = reference or moves
                    diff = [i for i in moves if moves[i] != reference.get(i)]
                    same = "yes" if not diff else f"NO: {', '.join(diff)}"
                    kv_name = "default" if kv < 0 else f"{kv:g} MiB"
                    threads = f", {args.threads} threads" if args.threads else ""
                    label = f"{model}, {Path(skill_path).stem}, kv {kv_name}{threads}, {workers}"
                    print(row(label, run, same))
                    s = run.stats
                    print(
                        f"<!-- calls {s.calls}, restored {s.restored}, parked {s.parked}, "
                        f"evicted {s.evicted}, wall {run.wall:.1f} s; actions "
                        f"{ {i: ' | '.join(a) for i, a in moves.items()} } -->",
                        flush=True,
                    )


if __name__ == "__main__":
    asyncio.run(main())
