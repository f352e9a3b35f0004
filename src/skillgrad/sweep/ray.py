"""The Ray executor: each run of a sweep is one Ray task (``num_cpus`` declared, no retries).

``address=None`` starts a private local cluster bound to 127.0.0.1 (no dashboard, no usage
stats) with ``workers`` CPUs; an address attaches to an existing cluster. Ray worker processes
are reused from run to run. A task writes its run directly into the sweep directory, so
the sweep directory must be on a filesystem every node sees at the same path: a task that
cannot see it fails with that message instead of writing somewhere the driver never looks.
A task whose worker dies is reported failed; re-running the sweep resumes the run.

A run whose config says ``hardware.executor: ray`` sends its heavy rollout parts to the same
cluster as Ray tasks of their own (the run's Ray worker reuses its connection, ``executors``),
so its own task declares no CPUs: otherwise the runs in flight would hold every CPU while their
rollouts wait for one, and the sweep would never finish.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillgrad.errors import SkillgradError
from skillgrad.executors import connect, import_ray
from skillgrad.sweep.executors import OnDone
from skillgrad.sweep.plan import PLAN_FILE, RunJob
from skillgrad.sweep.worker import RunOutcome, execute


def run_job(job_data: dict[str, Any]) -> dict[str, Any]:
    """The Ray task body (module level, so workers import it by name)."""
    job = RunJob.from_json(job_data)
    if not _sees_sweep(job):
        host = socket.gethostname()
        return RunOutcome(
            job.name,
            "failed",
            f"node {host} cannot see the sweep directory {job.sweep_dir}: the ray executor "
            "needs it on a filesystem shared by the driver and every worker node, at the same "
            "path (e.g. NFS); mount it there or run the sweep with --executor local",
            host=host,
        ).to_json()
    return execute(job).to_json()


def _sees_sweep(job: RunJob) -> bool:
    import json

    try:
        data = json.loads((Path(job.sweep_dir) / PLAN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("sweep_id") == job.sweep_id


class RayExecutor:
    name = "ray"

    def __init__(self, workers: int, address: str | None = None, cpus_per_run: float = 1) -> None:
        self.workers = workers
        self.address = address
        self.cpus_per_run = cpus_per_run

    def run(self, jobs: Sequence[RunJob], on_done: OnDone) -> list[RunOutcome]:
        ray = import_ray()
        started_here = not ray.is_initialized()
        if started_here:
            connect(ray, self.address, self.workers)
        try:
            return self._run(ray, jobs, on_done)
        finally:
            if started_here:
                ray.shutdown()

    def _run(self, ray: Any, jobs: Sequence[RunJob], on_done: OnDone) -> list[RunOutcome]:
        task = ray.remote(num_cpus=self.cpus_per_run, max_retries=0)(run_job)
        light = task.options(num_cpus=0)  # a run whose rollouts are Ray tasks of their own
        pending = list(jobs)
        running: dict[Any, RunJob] = {}
        outcomes: list[RunOutcome] = []
        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    job = pending.pop(0)
                    chosen = light if rollouts_on_ray(job) else task
                    running[chosen.remote(job.to_json())] = job
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    job = running.pop(ref)
                    outcome = _result(ray, ref, job)
                    outcomes.append(outcome)
                    on_done(outcome)
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
        return outcomes


def rollouts_on_ray(job: RunJob) -> bool:
    """The run's config says ``hardware.executor: ray`` (a config that does not load is left to
    the run itself to report)."""
    from skillgrad.config import load_config

    try:
        return load_config(job.config_path, list(job.overrides)).hardware.executor == "ray"
    except SkillgradError:
        return False


def _result(ray: Any, ref: Any, job: RunJob) -> RunOutcome:
    try:
        return RunOutcome(**ray.get(ref))
    except ray.exceptions.RayError as exc:  # the worker died, or the task raised
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return RunOutcome(job.name, "failed", f"ray task failed ({type(exc).__name__}): {first}")


__all__ = ["RayExecutor", "rollouts_on_ray", "run_job"]
