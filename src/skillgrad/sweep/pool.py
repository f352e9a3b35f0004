"""Where a sweep's runs go: a ``Pool`` runs the jobs, at most ``workers`` at once, and reports
each outcome. A pool never raises for one run's failure: the run's outcome says ``failed`` and
why, the others go on, and re-running the sweep resumes it. (Not to be confused with
``skillgrad.executors``, where one run's rollouts go.)

``LocalPool``: ``workers`` processes on this machine, one fresh process per run. Each run gets
its own process (``python -m skillgrad.sweep.pool``), started ahead as a warm
spare that has imported skillgrad and waits for its job on stdin, so a run's start-up overlaps
the runs in flight. A run's output goes to ``<sweep>/logs/<run>.log``. A run whose process dies
(a crash, SIGKILL, out of memory) is reported failed with the signal; the other runs go on.
Interrupting the sweep (Ctrl-C) stops every running process; each run has checkpointed after its
last step, so re-running the sweep resumes them.

``RayPool``: each run is one Ray task (``num_cpus`` declared, no retries). ``address=None``
starts a private local cluster bound to 127.0.0.1 (no dashboard, no usage stats) with
``workers`` CPUs; an address attaches to an existing cluster. Ray worker processes are reused
from run to run. A task writes its run directly into the sweep directory, so the sweep directory
must be on a filesystem every node sees at the same path: a task that cannot see it fails with
that message instead of writing somewhere the driver never looks. A task whose worker dies is
reported failed; re-running the sweep resumes the run. A run whose config says
``hardware.executor: ray`` sends its heavy rollout parts to the same cluster as Ray tasks of
their own (the run's Ray worker reuses its connection, ``executors``), so its own task declares
no CPUs: otherwise the runs in flight would hold every CPU while their rollouts wait for one,
and the sweep would never finish.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from skillgrad.config import Config
from skillgrad.errors import SkillgradError
from skillgrad.executors import connect, import_ray
from skillgrad.redact import redact_message
from skillgrad.runs.io import open_private, private_dirs
from skillgrad.sweep.plan import PLAN_FILE, RunJob
from skillgrad.sweep.worker import FINISHED, RunOutcome, execute

OnDone = Callable[[RunOutcome], None]


class Pool(Protocol):
    name: str

    def run(self, jobs: Sequence[RunJob], on_done: OnDone) -> list[RunOutcome]:
        """Run every job (each in its own process); call ``on_done`` as each one ends."""
        ...


_POLL_S = 0.05
_CODES = {0: FINISHED, 3: "budget_exhausted"}
Proc = subprocess.Popen[bytes]


class LocalPool:
    name = "local"

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers

    def run(self, jobs: Sequence[RunJob], on_done: OnDone) -> list[RunOutcome]:
        pending = list(jobs)
        running: dict[str, tuple[Proc, RunJob, float]] = {}
        spares: list[Proc] = []
        outcomes: list[RunOutcome] = []
        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    job = pending.pop(0)
                    proc = spares.pop(0) if spares else _spawn()
                    _hand_over(proc, job)
                    running[job.name] = (proc, job, time.monotonic())
                while len(spares) < min(len(pending), self.workers):
                    spares.append(_spawn())  # warm: imports while the running runs wait
                for name, (proc, job, start) in list(running.items()):
                    if proc.poll() is None:
                        continue
                    del running[name]
                    outcome = _outcome(job, proc.returncode, time.monotonic() - start)
                    outcomes.append(outcome)
                    on_done(outcome)
                time.sleep(_POLL_S)
        finally:
            _stop_all([proc for proc, _, _ in running.values()] + spares)
        return outcomes


def log_path(job: RunJob) -> Path:
    return Path(job.sweep_dir) / "logs" / f"{job.name}.log"


def _spawn() -> Proc:
    return subprocess.Popen(
        [sys.executable, "-m", "skillgrad.sweep.pool", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _hand_over(proc: Proc, job: RunJob) -> None:
    private_dirs(log_path(job).parent)
    assert proc.stdin is not None
    try:
        proc.stdin.write((json.dumps(job.to_json()) + "\n").encode("utf-8"))
        proc.stdin.close()
    except BrokenPipeError:  # the spare died before its job came: _outcome reports how
        pass


_PR_SET_PDEATHSIG = 1


def _die_with_driver(driver: int) -> None:
    """This run process dies with its sweep driver: one left alone after ``kill -9`` of the
    sweep would go on writing a run nobody summarises and hold its run lock, so the re-run sweep
    could not resume it. Linux: the kernel's parent-death signal, at once; elsewhere (and should
    the driver have died before that was set) a thread that looks every 0.2 s. The run's
    environment processes follow it (they watch their own parent)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    threading.Thread(target=_watch_driver, args=(driver,), daemon=True).start()


def _watch_driver(driver: int) -> None:
    while os.getppid() == driver:
        time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)


def serve_one(driver: int) -> int:
    """Worker process of the sweep driver ``driver`` (its pid): import everything, read one job
    from stdin, send output to its log, run it. Exit 0 finished, 3 budget exhausted, 2 a clear
    error (printed to the log)."""
    _die_with_driver(driver)
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # a spare that was never needed
    job = RunJob.from_json(json.loads(line))
    fd = open_private(log_path(job), os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    outcome = execute(job)
    if outcome.error:
        print(f"error: {redact_message(str(outcome.error))}", file=sys.stderr)
    return _CODES_BY_STATUS.get(outcome.status, 2)


_CODES_BY_STATUS = {FINISHED: 0, "skipped": 0, "budget_exhausted": 3}


def _outcome(job: RunJob, code: int, seconds: float) -> RunOutcome:
    if code in _CODES:
        status = _CODES[code]
        return RunOutcome(job.name, status, "" if code == 0 else _tail(job), seconds)
    if code < 0:
        why = f"its worker process was killed by {signal.Signals(-code).name}"
    else:
        why = f"error (exit {code}): {_tail(job)}"
    return RunOutcome(job.name, "failed", why, seconds)


def _tail(job: RunJob, lines: int = 6) -> str:
    try:
        text = log_path(job).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    tail = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(tail) + f" (log: {log_path(job)})"


def _stop_all(procs: list[Proc]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # a run checkpoints and exits cleanly
    deadline = time.monotonic() + 10
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
    try:
        data = json.loads((Path(job.sweep_dir) / PLAN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("sweep_id") == job.sweep_id


class RayPool:
    name = "ray"

    def __init__(
        self,
        workers: int,
        address: str | None = None,
        cpus_per_run: float = 1,
        configs: Mapping[str, Config] | None = None,
    ) -> None:
        self.workers = workers
        self.address = address
        self.cpus_per_run = cpus_per_run
        self.configs = dict(configs or {})  # the jobs' resolved configs, by job name

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
                    chosen = light if rollouts_on_ray(job, self.configs.get(job.name)) else task
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


def rollouts_on_ray(job: RunJob, cfg: Config | None = None) -> bool:
    """The run's config (``cfg``, else loaded) says ``hardware.executor: ray`` (a config that
    does not load is left to the run itself to report)."""
    from skillgrad.config import load_config

    if cfg is not None:
        return cfg.hardware.executor == "ray"
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


__all__ = [
    "LocalPool",
    "OnDone",
    "Pool",
    "RayPool",
    "log_path",
    "rollouts_on_ray",
    "run_job",
    "serve_one",
]


if __name__ == "__main__":  # pragma: no cover - run as a subprocess by LocalPool
    sys.exit(serve_one(int(sys.argv[1])))
