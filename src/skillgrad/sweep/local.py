"""The local executor: a pool of ``workers`` processes on this machine, one fresh process per run.

Each run is ``python -m skillgrad.sweep.worker JOB`` with its output in ``<sweep>/logs/<run>.log``.
A run whose process dies (a crash, SIGKILL, out of memory) is reported failed with the signal;
the other runs go on. Interrupting the sweep (Ctrl-C) stops every running process; each run has
checkpointed after its last step, so re-running the sweep resumes them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from skillgrad.sweep.executors import OnDone
from skillgrad.sweep.plan import RunJob
from skillgrad.sweep.worker import RunOutcome

_POLL_S = 0.05
_CODES = {0: "finished", 3: "budget_exhausted"}


class LocalExecutor:
    name = "local"

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers

    def run(self, jobs: Sequence[RunJob], on_done: OnDone) -> list[RunOutcome]:
        pending = list(jobs)
        running: dict[str, tuple[subprocess.Popen[bytes], RunJob, float]] = {}
        outcomes: list[RunOutcome] = []
        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    job = pending.pop(0)
                    running[job.name] = (_start(job), job, time.monotonic())
                for name, (proc, job, start) in list(running.items()):
                    if proc.poll() is None:
                        continue
                    del running[name]
                    outcome = _outcome(job, proc.returncode, time.monotonic() - start)
                    outcomes.append(outcome)
                    on_done(outcome)
                time.sleep(_POLL_S)
        finally:
            _stop_all([proc for proc, _, _ in running.values()])
        return outcomes


def log_path(job: RunJob) -> Path:
    return Path(job.sweep_dir) / "logs" / f"{job.name}.log"


def _start(job: RunJob) -> subprocess.Popen[bytes]:
    log = log_path(job)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "skillgrad.sweep.worker", json.dumps(job.to_json())],
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


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


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # the run checkpoints and exits cleanly
    deadline = time.monotonic() + 10
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


__all__ = ["LocalExecutor", "log_path"]
