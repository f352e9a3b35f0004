"""The local executor: a pool of ``workers`` processes on this machine, one fresh process per run.

Each run gets its own process (``python -m skillgrad.sweep.pool``), started ahead as a warm
spare that has imported skillgrad and waits for its job on stdin, so a run's start-up overlaps
the runs in flight. A run's output goes to ``<sweep>/logs/<run>.log``. A run whose process dies
(a crash, SIGKILL, out of memory) is reported failed with the signal; the other runs go on.
Interrupting the sweep (Ctrl-C) stops every running process; each run has checkpointed after its
last step, so re-running the sweep resumes them.
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

from skillgrad.redact import redact_message
from skillgrad.runs.io import open_private, private_dirs
from skillgrad.sweep.executors import OnDone
from skillgrad.sweep.plan import RunJob
from skillgrad.sweep.worker import FINISHED, RunOutcome

_POLL_S = 0.05
_CODES = {0: FINISHED, 3: "budget_exhausted"}
Proc = subprocess.Popen[bytes]


class LocalExecutor:
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
        [sys.executable, "-m", "skillgrad.sweep.pool"],
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


def serve_one() -> int:
    """Worker process: import everything, read one job from stdin, send output to its log, run
    it. Exit 0 finished, 3 budget exhausted, 2 a clear error (printed to the log)."""
    from skillgrad.sweep.worker import execute

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


if __name__ == "__main__":  # pragma: no cover - run as a subprocess by LocalExecutor
    sys.exit(serve_one())


__all__ = ["LocalExecutor", "log_path", "serve_one"]
