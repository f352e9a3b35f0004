"""``run_training``: assemble a run (task, splits, backends, run directory) and train it.

This is what ``skillgrad train`` calls. Re-running it on an existing run directory resumes;
``fresh=True`` starts over in a new directory. Budget, endpoint and systemic failures stop the
run cleanly after the last checkpoint, with a partial summary, and re-raise for the caller.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.callbacks import Callback
from skillgrad.config import Config
from skillgrad.errors import BudgetExceeded, ConfigError, ModelError, SystemicFailure
from skillgrad.models.base import ModelBackend, token_counter
from skillgrad.models.metering import Budget, MeteredBackend, PriceTable
from skillgrad.models.spec import ModelSpec
from skillgrad.registry import load_task
from skillgrad.runs.cache import CallCache
from skillgrad.runs.rundir import RunDir, find_fresh_root
from skillgrad.skill import approx_tokens
from skillgrad.tasks.base import SPLITS, Task
from skillgrad.train.context import RunContext
from skillgrad.train.loop import initial_skill_text, train, write_summary
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.types import Item


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    summary: dict[str, Any]


def run_dir_for(cfg: Config, config_path: str | None, fresh: bool = False) -> Path:
    name = cfg.env.run_name or (Path(config_path).stem if config_path else cfg.env.task)
    root = Path(cfg.env.output_root)
    if not root.is_absolute():
        root = Path.cwd() / root
    path = root / name
    return find_fresh_root(path) if fresh else path


def load_splits(task: Task) -> dict[str, list[Item]]:
    """All splits, checked before any model call: non-empty, unique ids, no leakage."""
    items: dict[str, list[Item]] = {s: task.load_split(s) for s in SPLITS}
    for split, rows in items.items():
        if not rows:
            raise ConfigError(f"the {split} split of task {task.name!r} is empty")
        ids = [i.id for i in rows]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ConfigError(f"duplicate item ids in the {split} split: {dupes[:10]}")
    for a, b, why in (
        ("val", "test", "the test split must be held out from the selection split"),
        ("train", "val", "the selection split must not be trained on"),
    ):
        shared = sorted({i.id for i in items[a]} & {i.id for i in items[b]})
        if shared:
            raise ConfigError(
                f"the {a} and {b} splits overlap ({why}): shared ids {shared[:20]}"
                f"{' ...' if len(shared) > 20 else ''}. Fix the data or the split ratios."
            )
    return items


def build_raw_backend(spec: ModelSpec, base_dir: str, shared: dict[str, Any]) -> ModelBackend:
    """The role's backend before metering; identical specs share one instance (one model load).

    In-process backends (llama.cpp, Python functions) get no retry or rate limit; remote ones are
    ``retry(limit(raw))`` with one limiter registry per run, shared by both roles."""
    from skillgrad.models.factory import build_backend
    from skillgrad.models.factory import build_raw_backend as raw_backend
    from skillgrad.models.ratelimit import LimiterRegistry

    if spec.provider == "function" and ".py:" in spec.model and not Path(spec.model).is_absolute():
        spec = spec.model_copy(update={"model": str(Path(base_dir) / spec.model)})
    key = spec.model_dump_json()
    if key not in shared:
        if spec.provider in ("llamacpp", "function"):
            shared[key] = raw_backend(spec)
        else:
            limiters = shared.setdefault("__limiters__", LimiterRegistry())
            shared[key] = build_backend(spec, limiters, rng_seed=0)
    backend: ModelBackend = shared[key]
    return backend


def run_training(
    cfg: Config,
    *,
    config_path: str | None = None,
    fresh: bool = False,
    run_dir: Path | None = None,
    callbacks: Sequence[Callback] = (),
    progress: Progress | None = None,
    optimizer: ModelBackend | None = None,
    target: ModelBackend | None = None,
) -> RunResult:
    """Train (or resume) one run; returns its directory and summary."""
    task = load_task(cfg.env.task, dict(cfg.env.options), Path(cfg.base_dir))
    items = load_splits(task)
    run = RunDir(run_dir or run_dir_for(cfg, config_path, fresh))
    run.create_or_check(cfg.redacted_json(), items)  # takes the run directory's writer lock
    if cfg.trackers:
        from skillgrad.trackers import build_trackers

        callbacks = [*callbacks, *build_trackers(cfg.trackers, run.root)]
    store = CallCache(run.paths.calls_db)
    shared: dict[str, Any] = {}
    raw_opt = optimizer or build_raw_backend(cfg.models.optimizer, cfg.base_dir, shared)
    raw_tgt = target or build_raw_backend(cfg.models.target, cfg.base_dir, shared)
    prices = PriceTable({**PriceTable().prices, **cfg.budget.prices})
    budget = Budget(cfg.budget.max_cost_usd, cfg.budget.max_tokens, cfg.budget.max_calls)
    ctx = RunContext(
        cfg=cfg,
        task=task,
        items=items,
        store=store,
        run=run,
        optimizer=MeteredBackend(raw_opt, store, "optimizer", prices, budget),
        target=MeteredBackend(raw_tgt, store, "target", prices, budget),
        steps_per_epoch=cfg.train.steps_per_epoch
        or math.ceil(len(items["train"]) / cfg.train.batch_size),
        callbacks=callbacks,
        progress=progress or NullProgress(),
        count_tokens=token_counter(raw_tgt) or approx_tokens,
        prices=prices,
    )
    show_usage = getattr(progress, "set_usage_source", None)
    if callable(show_usage):  # progress bars show tokens and cost so far
        show_usage(lambda: store.totals()["all"])
    bind = getattr(task, "bind_judge", None)
    if callable(bind):  # an LLM-judge scorer uses the optimizer model, metered as such
        bind(ctx.optimizer)
    try:
        skill = initial_skill_text(cfg.train.init_skill, cfg.base_dir)
        summary = asyncio.run(_train_and_close(ctx, skill))
    except (BudgetExceeded, ModelError, SystemicFailure) as exc:
        _stopped(ctx, exc)
        raise
    finally:
        store.close()
        run.close()
    return RunResult(run.root, summary)


async def _train_and_close(ctx: RunContext, skill: str) -> dict[str, Any]:
    from skillgrad.models.factory import aclose_backend

    try:
        return await train(ctx, skill)
    finally:  # close SDK connection pools while the event loop is still alive
        for backend in {id(b): b for b in (ctx.optimizer, ctx.target)}.values():
            await aclose_backend(backend)


def _stopped(ctx: RunContext, exc: Exception) -> None:
    """Record a clean stop: the last checkpoint stands; a partial summary says why."""
    status = "budget_exhausted" if isinstance(exc, BudgetExceeded) else "stopped"
    ctx.emit("stopped", status=status, error=f"{type(exc).__name__}: {exc}")
    state = ctx.run.load_state()
    if state is None:
        return
    write_summary(ctx, state, None, status=status, stop_reason=str(exc))


__all__ = ["RunResult", "build_raw_backend", "load_splits", "run_dir_for", "run_training"]
