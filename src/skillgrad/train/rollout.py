"""Rollout (the forward pass): run the target on items with a skill as its system prompt.

``rollout_workers`` items are in flight at once, independent of the batch size. Results are
cached per (skill hash, item id, sample) in the run's store, so a skill is never re-run on an
item it was already scored on. One item's error is a failed trajectory; every item missing
(``infra_error``) is systemic.

Samples and seeds (``train.samples_per_item``, ``train.seed``): sample ``k`` of an item is
drawn with the sampling seed ``sampling_seed(train.seed, k)`` — sample 0 uses ``train.seed``
itself, so with seed 0 a request is byte-identical to one built without this module — and is
cached under the item id (``k == 0``) or ``"{item id}#s{k}"`` (``k >= 1``). Repeated samples
(``k >= 1`` exist only when ``samples_per_item > 1``) are drawn at ``models.target.temperature``
when that is above the task's own temperature: a greedy target gives the same answer whatever
the seed.

Missing data: a trajectory with ``infra_error`` (a timeout or 5xx that outlived the backend's
retries, a crashed sandbox or agent program — nothing the model answered) is rolled out once
more; if it fails again it is returned as it is, never cached, and the gate and the scores
leave it out (``ItemScore.value`` is None when every sample of an item is missing).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from skillgrad.errors import SystemicFailure
from skillgrad.models.base import ModelBackend
from skillgrad.runs.cache import ResultStore, sample_key
from skillgrad.skill.document import skill_hash
from skillgrad.tasks.base import Task, infra_hint
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.types import ChatRequest, Completion, Item, Trajectory

INFRA_RETRIES = 1  # rollout-level retries of an infrastructure failure (after the backend's own)


def sampling_seed(train_seed: int, sample: int) -> int:
    """The target's sampling seed for sample ``sample`` of a run seeded ``train_seed``:
    ``train_seed`` for sample 0, else a stable 31-bit hash of both."""
    if sample == 0:
        return train_seed
    digest = hashlib.sha256(f"skillgrad-sample:{train_seed}:{sample}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


class SampledBackend:
    """Wraps the target: every request gets ``seed`` (and at least ``temperature``)."""

    def __init__(self, inner: ModelBackend, seed: int, temperature: float | None = None) -> None:
        self.inner = inner
        self.seed = seed
        self.temperature = temperature
        self.name = getattr(inner, "name", type(inner).__name__)

    def __getattr__(self, attr: str) -> object:  # count_tokens, name, ... of the real backend
        return getattr(self.inner, attr)

    def reseeded(self, draw: int, temperature: float | None = None) -> SampledBackend:
        """The same target drawing again: its seed moved on by ``draw`` (within 31 bits), at
        ``temperature`` when given."""
        temp = self.temperature if temperature is None else temperature
        return SampledBackend(self.inner, (self.seed + draw) & 0x7FFFFFFF, temp)

    async def complete(self, request: ChatRequest) -> Completion:
        changed = replace(request, seed=self.seed)
        if self.temperature is not None and self.temperature > request.temperature:
            changed = replace(changed, temperature=self.temperature)
        return await self.inner.complete(changed)


def sampled(
    backend: ModelBackend, train_seed: int, sample: int, temperature: float | None = None
) -> ModelBackend:
    """``backend`` drawing sample ``sample``; the backend itself when nothing changes (seed 0,
    sample 0: requests exactly as the task built them)."""
    seed = sampling_seed(train_seed, sample)
    temp = temperature if sample > 0 else None
    if seed == 0 and not temp:
        return backend
    return SampledBackend(backend, seed, temp)


async def rollout_item(
    task: Task,
    item: Item,
    skill: str,
    backend: ModelBackend,
    *,
    store: ResultStore | None = None,
    sample: int = 0,
    seed: int = 0,
    temperature: float | None = None,
    cache_id: str | None = None,
) -> Trajectory:
    """One sample of one item: from the cache, else rolled out (an infrastructure failure is
    retried ``INFRA_RETRIES`` times); cached when it has no error. ``cache_id`` (default: the
    sample's ``sample_key``) names the result in the store, e.g. an exploration attempt's."""
    key = skill_hash(skill)
    cache_id = cache_id or sample_key(item.id, sample)
    cached = store.get_result(key, cache_id) if store else None
    if cached is not None:
        return replace(cached, item_id=item.id)
    target = sampled(backend, seed, sample, temperature)
    traj = await task.rollout(item, skill, target)
    for _ in range(INFRA_RETRIES):
        if traj.infra_error is None:
            break
        traj = await task.rollout(item, skill, target)
    if store is not None and traj.error is None:
        stored = store.put_result(replace(traj, item_id=cache_id))
        return replace(stored, item_id=item.id)  # as a resume reads it: secrets redacted
    return traj


async def rollout(
    task: Task,
    items: Sequence[Item],
    skill: str,
    backend: ModelBackend,
    *,
    workers: int,
    store: ResultStore | None = None,
    progress: Progress | None = None,
    stage: str = "rollout",
    seed: int = 0,
    sample: int = 0,
    temperature: float | None = None,
) -> list[Trajectory]:
    """Trajectories for ``items`` in the same order; raises SystemicFailure if all errored."""
    progress = progress or NullProgress()
    progress.start(stage, len(items))
    limit = asyncio.Semaphore(workers)

    async def one(item: Item) -> Trajectory:
        async with limit:
            traj = await rollout_item(
                task,
                item,
                skill,
                backend,
                store=store,
                sample=sample,
                seed=seed,
                temperature=temperature,
            )
        progress.advance(stage, info=f"{traj.score.value:.2f}")
        return traj

    try:
        results = await asyncio.gather(*(one(i) for i in items))
    finally:
        progress.finish(stage)
    check_systemic(results, stage)
    return list(results)


def check_systemic(results: Sequence[Trajectory], stage: str) -> None:
    """Raise SystemicFailure when every item of the stage is missing data (``infra_error``:
    the target or the sandbox could not be reached). Items whose own reply failed (unreadable,
    a tool loop, a scorer raising on it) are scores: a candidate whose every reply fails is a
    bad candidate, not a broken run (``skillgrad/errors.py``: the rule)."""
    if results and all(t.infra_error for t in results):
        raise SystemicFailure(
            f"every one of {len(results)} {stage} items failed; first error: "
            f"{results[0].infra_error}. {infra_hint(results)}"
        )


@dataclass(frozen=True)
class ItemScore:
    """An item's samples under one skill: the score is their mean, infrastructure failures
    left out (missing data); ``value`` is None when every sample is missing."""

    item_id: str
    samples: tuple[Trajectory, ...]

    @cached_property
    def present(self) -> tuple[Trajectory, ...]:
        return tuple(t for t in self.samples if t.infra_error is None)

    @property
    def missing(self) -> bool:
        return not self.present

    @property
    def value(self) -> float | None:
        ok = self.present
        return math.fsum(t.score.value for t in ok) / len(ok) if ok else None

    @property
    def passed(self) -> bool | None:
        """Passed on more than half of its present samples (None when missing)."""
        ok = self.present
        return sum(t.score.passed for t in ok) * 2 > len(ok) if ok else None


async def score_items(
    task: Task,
    items: Sequence[Item],
    skill: str,
    backend: ModelBackend,
    *,
    samples: int,
    workers: int,
    store: ResultStore | None = None,
    progress: Progress | None = None,
    stage: str = "rollout",
    seed: int = 0,
    temperature: float | None = None,
) -> list[ItemScore]:
    """Every item ``samples`` times (cached per sample), grouped per item, in item order."""
    per_sample = [
        await rollout(
            task,
            items,
            skill,
            backend,
            workers=workers,
            store=store,
            progress=progress,
            stage=stage if samples == 1 else f"{stage} (sample {k + 1}/{samples})",
            seed=seed,
            sample=k,
            temperature=temperature,
        )
        for k in range(samples)
    ]
    return [ItemScore(item.id, tuple(run[i] for run in per_sample)) for i, item in enumerate(items)]


def cached_item_scores(
    store: ResultStore, items: Sequence[Item], skill: str, samples: int
) -> list[ItemScore]:
    """The item scores of ``skill`` as far as the result cache has them (no model call); an
    item none of whose samples is cached comes back with no samples (missing)."""
    key = skill_hash(skill)
    out = []
    for item in items:
        found = [store.get_result(key, sample_key(item.id, k)) for k in range(samples)]
        trajs = tuple(replace(t, item_id=item.id) for t in found if t is not None)
        out.append(ItemScore(item.id, trajs))
    return out


def mean_score(trajectories: Sequence[Trajectory]) -> float:
    """Mean score, trajectories with an infrastructure failure left out (missing, not zero)."""
    ok = [t for t in trajectories if t.infra_error is None]
    return sum(t.score.value for t in ok) / len(ok) if ok else 0.0


def mean_item_score(scores: Sequence[ItemScore]) -> float:
    """Mean of the items' scores, missing items left out."""
    values = [s.value for s in scores if s.value is not None]
    return math.fsum(values) / len(values) if values else 0.0


__all__ = [
    "INFRA_RETRIES",
    "ItemScore",
    "SampledBackend",
    "cached_item_scores",
    "check_systemic",
    "mean_item_score",
    "mean_score",
    "rollout",
    "rollout_item",
    "sampled",
    "sampling_seed",
    "score_items",
]
