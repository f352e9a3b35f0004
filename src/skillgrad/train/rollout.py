"""Rollout (the forward pass): run the target on items with a skill as its system prompt.

``rollout_workers`` items are in flight at once, independent of the batch size. Results are
cached per (skill hash, item id) in the run's store, so a skill is never re-run on an item it was
already scored on. One item's error is a failed trajectory; every item erroring is systemic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from skillgrad.errors import SystemicFailure
from skillgrad.models.base import ModelBackend
from skillgrad.runs.cache import CallCache
from skillgrad.skill import skill_hash
from skillgrad.tasks.base import Task
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.types import Item, Trajectory


async def rollout(
    task: Task,
    items: Sequence[Item],
    skill: str,
    backend: ModelBackend,
    *,
    workers: int,
    store: CallCache | None = None,
    progress: Progress | None = None,
    stage: str = "rollout",
) -> list[Trajectory]:
    """Trajectories for ``items`` in the same order; raises SystemicFailure if all errored."""
    progress = progress or NullProgress()
    progress.start(stage, len(items))
    limit = asyncio.Semaphore(workers)
    key = skill_hash(skill)

    async def one(item: Item) -> Trajectory:
        cached = store.get_result(key, item.id) if store else None
        if cached is not None:
            progress.advance(stage, info=f"{cached.score.value:.2f}")
            return cached
        async with limit:
            traj = await task.rollout(item, skill, backend)
        if store is not None and traj.error is None:
            store.put_result(traj)
        progress.advance(stage, info=f"{traj.score.value:.2f}")
        return traj

    try:
        results = await asyncio.gather(*(one(i) for i in items))
    finally:
        progress.finish(stage)
    if results and all(t.error for t in results):
        raise SystemicFailure(
            f"every one of {len(results)} {stage} items failed; first error: {results[0].error}. "
            "Check the target model endpoint and credentials, then re-run to resume."
        )
    return list(results)


def mean_score(trajectories: Sequence[Trajectory]) -> float:
    return sum(t.score.value for t in trajectories) / len(trajectories) if trajectories else 0.0


__all__ = ["mean_score", "rollout"]
