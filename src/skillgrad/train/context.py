"""Session and RunContext: what every stage of a run needs, assembled once by
``skillgrad.session``.

The ``Session`` is the config, the task and its splits, the metered backends (and the check
targets') and the call store: what ``train`` and ``eval`` both score with. The ``RunContext``
holds the session, the run directory, callbacks and progress. The training state is
``TrainState``; what the trust checks measure during the run (the noise floor, the control
arms) is recorded on the context for the summary, and re-measured from the caches on a resume.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from skillgrad.callbacks import Callback, Control, describe_event
from skillgrad.config import Config
from skillgrad.executors import LOCAL, RolloutExecutor
from skillgrad.models.base import ModelBackend, backend_name, token_counter
from skillgrad.models.registry import aclose_backend
from skillgrad.models.wrappers.metering import MeteredBackend, PriceTable
from skillgrad.runs.cache import CallCache, ResultStore
from skillgrad.runs.provenance import CodeProvenance, code_provenance
from skillgrad.runs.rundir import RunDir
from skillgrad.skill.document import approx_tokens
from skillgrad.tasks.base import Task, task_abilities
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.train.rollout import rollout
from skillgrad.train.screens.leaks import LeakIndex
from skillgrad.train.screens.specific import ItemWords
from skillgrad.train.select import Schedule
from skillgrad.types import Item, Trajectory

ROLES = ("optimizer", "target")
CHECK_ROLE = "check_target"
"""The ledger role of every check target's calls (``train.check_targets``)."""
events_log = logging.getLogger("skillgrad.events")


@dataclass(frozen=True)
class CheckTarget:
    """One check target (``train.check_targets``): its metered backend (role ``CHECK_ROLE``),
    its own view of the result cache, and its sampling temperature for repeated val samples."""

    name: str
    backend: ModelBackend
    results: ResultStore
    temperature: float = 0.0


@dataclass
class Session:
    """A command's assembled parts (no training state): task, splits, metered roles, store.
    ``train`` and ``eval`` build one per command and score every skill with it."""

    cfg: Config
    task: Task
    items: dict[str, list[Item]]
    store: CallCache
    optimizer: MeteredBackend
    target: MeteredBackend
    prices: PriceTable
    executor: RolloutExecutor = field(default=LOCAL)
    check_targets: list[CheckTarget] = field(default_factory=list)

    @property
    def count_tokens(self) -> Callable[[str], int]:
        """The target's own tokenizer, else the rough ``approx_tokens``."""
        return token_counter(self.target) or approx_tokens

    async def aclose(self) -> None:
        """Close SDK connection pools while the event loop that used them is still alive, what
        the task started (environment processes) and the executor (a Ray cluster it started)."""
        backends = [self.optimizer, self.target, *(c.backend for c in self.check_targets)]
        try:
            for backend in {id(b): b for b in backends}.values():
                await aclose_backend(backend)
        finally:
            try:
                task_abilities(self.task).close()  # environment processes
            finally:
                self.executor.close()


@dataclass
class RunContext:
    """One training run: its ``Session`` (read through the properties below), the run
    directory, callbacks, progress, and what the trust checks measured."""

    session: Session
    run: RunDir
    steps_per_epoch: int
    callbacks: Sequence[Callback] = ()
    progress: Progress = field(default_factory=NullProgress)
    control: Control = field(default_factory=Control)
    noise_threshold: float = 0.0
    """The measured noise floor's threshold the gate refuses a mean difference at or below
    (``train/trust/noise.py``; 0 until measured, or with ``train.noise_gate`` off)."""
    noise_floor: dict[str, Any] | None = None
    """The A/A measurement (``NoiseFloor.to_json``), for the summary and report."""
    controls: dict[str, Any] | None = None
    """The control arms on the test split (``train/trust/controls.py``; ``train.controls``)."""
    code: CodeProvenance = field(default_factory=code_provenance)
    """The code running the run now (``runs/provenance.py``), recorded in ``TrainState.code``."""

    @property
    def cfg(self) -> Config:
        return self.session.cfg

    @property
    def task(self) -> Task:
        return self.session.task

    @property
    def items(self) -> dict[str, list[Item]]:
        return self.session.items

    @property
    def optimizer(self) -> ModelBackend:
        return self.session.optimizer

    @property
    def target(self) -> ModelBackend:
        return self.session.target

    @property
    def store(self) -> CallCache:
        return self.session.store

    @property
    def prices(self) -> PriceTable:
        return self.session.prices

    @property
    def check_targets(self) -> Sequence[CheckTarget]:
        return self.session.check_targets

    @property
    def count_tokens(self) -> Callable[[str], int]:
        return self.session.count_tokens

    @property
    def schedule(self) -> Schedule:
        t = self.cfg.train
        return Schedule(
            kind=t.lr_scheduler,
            max_lr=t.learning_rate,
            min_lr=min(t.min_learning_rate, t.learning_rate),
            total_steps=t.num_epochs * self.steps_per_epoch,
            warmup_steps=t.warmup_steps,
        )

    @cached_property
    def leak_index(self) -> LeakIndex:
        """The train and val items indexed for the answer-leak check (built once per run)."""
        splits = {s: self.items.get(s, []) for s in ("train", "val")}
        return LeakIndex.build(splits, self.cfg.train.leak_ngram)

    @cached_property
    def item_words(self) -> ItemWords:
        """The train and val items as words, for the item-specific line screen (built once)."""
        return ItemWords.build({s: self.items.get(s, []) for s in ("train", "val")})

    @property
    def model_names(self) -> tuple[str, str]:
        return backend_name(self.optimizer), backend_name(self.target)

    @property
    def deterministic(self) -> bool:
        return task_abilities(self.task).deterministic

    async def rollout(
        self, items: Sequence[Item], skill: str, stage: str = "rollout"
    ) -> list[Trajectory]:
        """Roll ``items`` out on the target with this run's workers, result store and progress."""
        return await rollout(
            self.task,
            items,
            skill,
            self.target,
            workers=self.cfg.hardware.rollout_workers,
            store=self.store,
            progress=self.progress,
            stage=stage,
            seed=self.cfg.train.seed,
        )

    def emit(self, name: str, **fields: Any) -> None:
        """Write the event to events.jsonl, log it (``skillgrad.events``), pass it to callbacks."""
        record = self.run.event(name, **fields)
        described = describe_event(record)
        if described is not None:
            events_log.log(*described)
        else:
            events_log.debug("event %s", name)
        for cb in self.callbacks:
            cb.on_event(record, self.control)

    @property
    def roles(self) -> tuple[str, ...]:
        """The ledger roles of this run: the two of every run, and ``CHECK_ROLE`` with check
        targets."""
        return (*ROLES, CHECK_ROLE) if self.check_targets else ROLES

    def usage(self, step: int) -> dict[str, Any]:
        """Calls, tokens and cost per role for ``step`` (from the ledger) and running totals."""
        now = self.store.totals("step=?", (step,))
        total = self.store.totals()["all"]
        roles = self.roles

        def pick(key: str) -> dict[str, float]:
            return {r: now.get(r, {}).get(key, 0.0) for r in roles}

        tokens = {
            r: int(
                now.get(r, {}).get("prompt_tokens", 0) + now.get(r, {}).get("completion_tokens", 0)
            )
            for r in roles
        }
        return {
            "calls": {r: int(v) for r, v in pick("calls").items()},
            "tokens": tokens,
            "cost": {r: round(v, 6) for r, v in pick("cost").items()},
            "cum_calls": int(total["calls"]),
            "cum_cost": round(total["cost"], 6),
        }


__all__ = ["CHECK_ROLE", "ROLES", "CheckTarget", "RunContext", "Session"]
