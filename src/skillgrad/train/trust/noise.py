"""Noise floor (an A/A test): the initial skill scored ``train.noise_repeats`` times on the val
items, before any optimizer call. What the target does twice on the same item bounds what a
gain can mean: an item that flips between two identical passes can flip between incumbent and
candidate for no reason at all.

Per item the score's variance across repeats (unbiased); ``flip_rate`` is the share of items
whose pass/fail differs between repeats. Under pure noise the mean paired difference of n items
has standard error ``SE = sqrt(2 * mean variance / n)``; the gate refuses a mean difference at
or below ``noise_threshold = z(confidence) * SE`` (pure noise exceeds it with probability
``1 - confidence``), and ``minimum_detectable_effect = (z(confidence) + z(0.8)) * SE`` is the
true gain the gate accepts 80% of the time. Repeat 1 is the baseline itself.

Repeats are sent ``cached`` (the very requests of the baseline: the call cache answers them, so
a deterministic target — temperature 0 in process — costs nothing and shows 0 flips, and the
output says so) or ``fresh`` (the same prompts with a repeat-specific sampling seed, past the
call cache: paid, and what a nondeterministic server or agent actually does). ``auto``: fresh
unless the target runs in process (``llamacpp``, ``function``). Fresh repeats are kept in the
result store (key ``<item>#s<1000+r>``), so a resumed run re-measures for free.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any, Literal

from skillgrad.config import Config
from skillgrad.models.base import ModelBackend
from skillgrad.models.context import call_context
from skillgrad.runs.cache import CallCache, ResultStore
from skillgrad.tasks.base import Task
from skillgrad.train.context import RunContext, Session
from skillgrad.train.rollout import ItemScore, rollout_item
from skillgrad.types import Item, Trajectory

REPEAT_SAMPLE_BASE = 1000  # result-store sample index of fresh repeat r: far above samples_per_item
REMEASURE_SAMPLE_BASE = 100_000  # ... and of the incumbent re-measured at step s (noise_remeasure)
POWER = 0.8  # the power of the minimum detectable effect
IN_PROCESS = ("llamacpp", "function")
NoiseCalls = Literal["auto", "cached", "fresh"]


@dataclass(frozen=True)
class NoiseFloor:
    """``summary.json``'s ``noise_floor``: what the A/A passes measured."""

    repeats: int
    items: int
    calls: Literal["cached", "fresh"]
    flip_rate: float
    flipped: tuple[str, ...]
    item_variance: float
    confidence: float
    noise_threshold: float
    minimum_detectable_effect: float
    calls_paid: int

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["flipped"] = list(self.flipped)
        return data

    @property
    def note(self) -> str:
        """One line for the console and the report."""
        head = (
            f"noise floor (A/A, {self.repeats} passes of the initial skill on {self.items} val "
            f"items): flip rate {self.flip_rate:.1%}, noise threshold "
            f"{self.noise_threshold:+.3f}, minimum detectable effect "
            f"{self.minimum_detectable_effect:+.3f}"
        )
        if self.calls == "cached":
            return head + (
                f"; repeats answered by the call cache ({self.calls_paid} calls paid): a "
                "deterministic target repeats itself exactly. A nondeterministic target needs "
                "train.noise_calls: fresh"
            )
        return head + f"; {self.calls_paid} fresh target calls paid"


def noise_calls(cfg: Config) -> Literal["cached", "fresh"]:
    """``train.noise_calls`` resolved: ``auto`` is fresh unless the target runs in process."""
    mode = cfg.train.noise_calls
    if mode != "auto":
        return mode
    harness = cfg.env.options.get("harness") is not None  # an agent CLI: never exact
    return "cached" if cfg.models.target.provider in IN_PROCESS and not harness else "fresh"


def noise_statistics(
    passes: Sequence[Sequence[Trajectory]], confidence: float
) -> tuple[float, tuple[str, ...], float, float, float]:
    """(flip rate, flipped item ids, mean item variance, noise threshold, minimum detectable
    effect) of ``passes`` (one list of trajectories per repeat, items in the same order).
    Items with an infrastructure failure in any pass are left out (missing, not noise)."""
    rows = list(zip(*passes, strict=True))
    usable = [r for r in rows if all(t.infra_error is None for t in r)]
    if not usable or len(passes) < 2:
        return 0.0, (), 0.0, 0.0, 0.0
    flipped = tuple(r[0].item_id for r in usable if len({t.score.passed for t in r}) > 1)
    variances = []
    for r in usable:
        values = [t.score.value for t in r]
        mean = math.fsum(values) / len(values)
        variances.append(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
    var = math.fsum(variances) / len(variances)
    se = math.sqrt(2 * var / len(usable))
    z = NormalDist().inv_cdf(confidence)
    threshold = z * se
    mde = (z + NormalDist().inv_cdf(POWER)) * se
    return len(flipped) / len(usable), flipped, var, threshold, mde


async def repeat_pass(
    task: Task,
    items: Sequence[Item],
    skill: str,
    target: ModelBackend,
    *,
    store: ResultStore,
    sample: int,
    mode: str,
    seed: int,
    workers: int,
) -> list[Trajectory]:
    """One more pass of ``skill`` on ``items``: ``cached`` sends the baseline's own requests
    (no result store: the call cache answers and the scorer scores again), ``fresh`` those of
    result-store sample ``sample`` (its own sampling seed; kept, so a resume pays nothing)."""
    limit = asyncio.Semaphore(workers)

    async def one(item: Item) -> Trajectory:
        async with limit:
            if mode == "cached":
                return await rollout_item(task, item, skill, target, seed=seed)
            return await rollout_item(
                task, item, skill, target, store=store, sample=sample, seed=seed
            )

    return list(await asyncio.gather(*(one(i) for i in items)))


def _pass(session: Session, skill: str, items: Sequence[Item], sample: int, mode: str) -> Any:
    return repeat_pass(
        session.task,
        items,
        skill,
        session.target,
        store=session.store,
        sample=sample,
        mode=mode,
        seed=session.cfg.train.seed,
        workers=session.cfg.hardware.rollout_workers,
    )


def target_calls(store: CallCache) -> int:
    """Target calls paid so far (the ledger's)."""
    return int(store.totals().get("target", {}).get("calls", 0))


async def measure_noise(ctx: RunContext, skill: str, baseline: Sequence[ItemScore]) -> NoiseFloor:
    """The A/A test of ``skill`` (the initial skill; ``baseline``: its val scores, the first
    pass) with ``train.noise_repeats`` passes."""
    first = {s.item_id: s.samples[0] for s in baseline if s.samples}  # missing: not cached
    items = [i for i in ctx.items["val"] if i.id in first]
    first_pass = [first[i.id] for i in items]
    noise, _ = await aa_test(ctx.session, skill, items, first_pass, ctx.cfg.train.noise_repeats)
    return noise


async def aa_test(
    session: Session,
    skill: str,
    items: Sequence[Item],
    first: Sequence[Trajectory],
    repeats: int,
) -> tuple[NoiseFloor, list[list[Trajectory]]]:
    """The A/A test of ``skill`` on ``items`` (training's noise floor, ``eval --repeat``):
    ``first`` is its first pass (one trajectory per item), then ``repeats - 1`` more passes
    sent ``train.noise_calls``, under ``call_context("noise_floor")`` in the ledger. The noise
    floor, with the target calls the repeats paid, and the passes."""
    mode = noise_calls(session.cfg)
    passes: list[list[Trajectory]] = [list(first)]
    before = target_calls(session.store)
    with call_context("noise_floor", 0):
        for r in range(1, repeats):
            passes.append(await _pass(session, skill, items, REPEAT_SAMPLE_BASE + r, mode))
    paid = target_calls(session.store) - before
    return noise_floor_of(passes, mode, session.cfg.train.gate_confidence, paid), passes


def gate_margin(noise: NoiseFloor, cfg: Config) -> float:
    """What the measured noise adds to the gate's margin: its threshold under
    ``train.noise_gate``, else nothing."""
    return noise.noise_threshold if cfg.train.noise_gate else 0.0


def noise_floor_of(
    passes: Sequence[Sequence[Trajectory]], mode: str, confidence: float, paid: int
) -> NoiseFloor:
    """The NoiseFloor record of ``passes`` (``noise_statistics``), sent ``mode``."""
    flip, flipped, var, threshold, mde = noise_statistics(passes, confidence)
    return NoiseFloor(
        repeats=len(passes),
        items=len(passes[0]) if passes else 0,
        calls="cached" if mode == "cached" else "fresh",
        flip_rate=flip,
        flipped=flipped,
        item_variance=var,
        confidence=confidence,
        noise_threshold=threshold,
        minimum_detectable_effect=mde,
        calls_paid=paid,
    )


async def remeasured_incumbent(
    ctx: RunContext, skill: str, step: int, cached: Sequence[ItemScore]
) -> list[ItemScore]:
    """``train.noise_remeasure``: the incumbent's first sample drawn afresh in the same round
    as the candidate (fresh calls, kept per step), its other samples as ``cached`` has them, so
    both skills face the target's noise of the moment."""
    sample = REMEASURE_SAMPLE_BASE + step
    trajs = await _pass(ctx.session, skill, ctx.items["val"], sample, "fresh")
    rest = {s.item_id: s.samples[1:] for s in cached}
    return [ItemScore(t.item_id, (t, *rest.get(t.item_id, ()))) for t in trajs]


__all__ = [
    "IN_PROCESS",
    "REMEASURE_SAMPLE_BASE",
    "REPEAT_SAMPLE_BASE",
    "NoiseCalls",
    "NoiseFloor",
    "aa_test",
    "gate_margin",
    "measure_noise",
    "noise_calls",
    "noise_floor_of",
    "noise_statistics",
    "remeasured_incumbent",
    "repeat_pass",
    "target_calls",
]
