"""Run one job of a sweep through the public API, in whatever process an executor chose.

``execute(job)`` trains (or resumes) the run in ``job.run_dir`` with ``load_config`` +
``run_training`` and returns a ``RunOutcome``; a run that already finished is not touched.
The local pool calls it in a fresh process per run (``sweep/pool.py``), Ray in a Ray task.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.errors import BudgetExceeded, SkillgradError
from skillgrad.runs.view import read_summary
from skillgrad.sweep.plan import RunJob

FINISHED = "finished"
COMPLETE = (FINISHED, "early_stopped")
"""Statuses of a run that ended normally (its test split scored): all epochs, or patience."""


@dataclass(frozen=True)
class RunOutcome:
    """What became of one job: ``status`` is finished, skipped (finished earlier),
    budget_exhausted or failed (``error`` says why: the run's message, or how its process died)."""

    name: str
    status: str
    error: str = ""
    seconds: float = 0.0
    host: str = ""

    @property
    def ok(self) -> bool:
        return self.status in (FINISHED, "skipped")

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def is_finished(run_dir: Path) -> bool:
    summary = read_summary(Path(run_dir))
    return summary is not None and summary.get("status") in COMPLETE


def execute(job: RunJob) -> RunOutcome:
    """Train or resume ``job``; errors become outcomes (never raised), so a pool keeps going."""
    from skillgrad import load_config, run_training

    start = time.monotonic()
    host = socket.gethostname()
    if is_finished(Path(job.run_dir)):
        return RunOutcome(job.name, "skipped", host=host)
    try:
        cfg = load_config(job.config_path, list(job.overrides))
        result = run_training(cfg, run_dir=Path(job.run_dir))
    except BudgetExceeded as exc:
        return RunOutcome(job.name, "budget_exhausted", str(exc), time.monotonic() - start, host)
    except SkillgradError as exc:
        return RunOutcome(job.name, "failed", str(exc), time.monotonic() - start, host)
    status = str(result.summary.get("status", FINISHED))
    if status in COMPLETE:  # all epochs, or stopped by patience: the run ended normally
        status = FINISHED
    return RunOutcome(job.name, status, "", time.monotonic() - start, host)
