"""Run a sweep: write or check its plan, run the unfinished jobs on a pool, summarise.

Re-running the same sweep resumes it: finished runs are skipped without starting a process,
unfinished ones resume through the normal run resume (each run's call cache lives in its run
directory, so no model call is paid twice), and ``sweep_summary.json`` is rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.config import Config
from skillgrad.errors import ConfigError
from skillgrad.executors import import_ray
from skillgrad.models.registry import check_models
from skillgrad.session import configured_specs
from skillgrad.sweep.plan import SweepPlan, check_or_write_plan
from skillgrad.sweep.pool import LocalPool, Pool, RayPool
from skillgrad.sweep.summary import write_sweep_summary
from skillgrad.sweep.worker import RunOutcome, is_finished

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class SweepResult:
    sweep_dir: Path
    resumed: bool
    outcomes: tuple[RunOutcome, ...]
    summary: dict[str, Any]

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if not o.ok]


def make_pool(
    name: str,
    workers: int,
    ray_address: str | None = None,
    configs: Mapping[str, Config] | None = None,
) -> Pool:
    """The ``local`` or ``ray`` pool; ``configs``: the jobs' resolved configs by job name
    (``SweepPlan.run_configs``), so the driver does not load them again."""
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if name == "local":
        if ray_address:
            raise ConfigError("--ray-address needs --executor ray")
        return LocalPool(workers)
    if name == "ray":
        import_ray()  # a missing extra is reported before anything runs
        return RayPool(workers, ray_address, configs=configs)
    raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")


def check_plan_models(plan: SweepPlan) -> None:
    """The models of every unfinished run are usable on this machine (a local model installed
    and verified), so a missing one stops the sweep before any run starts."""
    specs = []
    for job in plan.jobs:
        if not is_finished(Path(job.run_dir)):
            specs += configured_specs(plan.run_config(job))
    check_models(specs)


def run_sweep(
    plan: SweepPlan,
    pool: Pool,
    on_done: Callable[[RunOutcome], None] = lambda _: None,
) -> SweepResult:
    resumed = check_or_write_plan(plan)
    done = [RunOutcome(j.name, "skipped") for j in plan.jobs if is_finished(Path(j.run_dir))]
    for outcome in done:
        on_done(outcome)
    skipped = {o.name for o in done}
    todo = [j for j in plan.jobs if j.name not in skipped]
    try:
        outcomes = pool.run(todo, on_done) if todo else []
    finally:  # also after Ctrl-C: the summary covers what finished
        summary = write_sweep_summary(plan.sweep_dir)
    return SweepResult(plan.sweep_dir, resumed, (*done, *outcomes), summary)


__all__ = ["EXECUTORS", "SweepResult", "check_plan_models", "make_pool", "run_sweep"]
