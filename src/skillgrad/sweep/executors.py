"""The Executor protocol: run a sweep's jobs, at most ``workers`` at once, report each outcome.

Implementations: ``local.LocalExecutor`` (a pool of worker processes on this machine) and
``ray.RayExecutor`` (one Ray task per run). An executor never raises for one run's failure: the
run's outcome says ``failed`` and why, the others go on, and re-running the sweep resumes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from skillgrad.sweep.plan import RunJob
from skillgrad.sweep.worker import RunOutcome

OnDone = Callable[[RunOutcome], None]


class Executor(Protocol):
    name: str

    def run(self, jobs: Sequence[RunJob], on_done: OnDone) -> list[RunOutcome]:
        """Run every job (each in its own process); call ``on_done`` as each one ends."""
        ...


__all__ = ["Executor", "OnDone"]
