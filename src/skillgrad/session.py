"""THE one place a run is assembled from a config: used by ``train``, ``eval``, ``sweep``, ``fit``.

``open_session`` builds, in this order: the task (registry), its splits (``load_splits``: checked
before any model call), the task's start check (``check_ready``: an environment is built once), the
two roles' backends and, for training, the check targets' (``train.check_targets``; each provider's
declared ability decides the wrappers: remote -> ``retry(limit(raw))`` with one limiter registry
per run shared by all roles, in-process -> called directly), metering into the call store (prices
and budget, shared by all), the judge binding (an LLM-judge scorer uses the optimizer, metered as
such), the token counter and, for a task with heavy rollouts (code, agents), the
``hardware.executor`` that runs their heavy part (``skillgrad.executors``; closed by
``Session.aclose``). Other tasks ignore the executor.

``run_training`` trains (or resumes) one run on top of it: re-running on an existing run
directory resumes; ``fresh=True`` starts over in a new directory. Budget, endpoint and systemic
failures stop the run cleanly after the last checkpoint, with a partial summary, and re-raise.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.callbacks import Callback
from skillgrad.config import Config, check_target_problems, config_defaults, keep_run_settings
from skillgrad.errors import (
    BudgetExceeded,
    ConfigError,
    ModelError,
    NoHeadroom,
    SkillgradError,
    SystemicFailure,
)
from skillgrad.executors import open_executor
from skillgrad.models.base import ModelBackend, backend_name
from skillgrad.models.registry import build_backend, check_models
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.metering import Budget, MeteredBackend, PriceTable
from skillgrad.models.wrappers.ratelimit import LimiterRegistry
from skillgrad.registry import load_task
from skillgrad.runs.cache import CallCache, TargetResults
from skillgrad.runs.provenance import CodeProvenance, code_provenance
from skillgrad.runs.rundir import RunDir, find_fresh_root
from skillgrad.skill.text import valid_data
from skillgrad.tasks.base import SPLITS, Task, task_abilities
from skillgrad.train.context import CHECK_ROLE, CheckTarget, RunContext, Session
from skillgrad.train.loop import initial_skill_text, train, write_summary
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.train.state import TrainState
from skillgrad.types import Item

log = logging.getLogger(__name__)
_AWKWARD = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    summary: dict[str, Any]


def safe_name(name: str) -> str:
    """``name`` with every run of characters awkward in paths (``/ : space [ ]`` ...) as ``-``."""
    cleaned = _AWKWARD.sub("-", name).strip("-.")
    return cleaned or "run"


def run_dir_for(cfg: Config, config_path: str | None, fresh: bool = False) -> Path:
    """``<output_root>/<run_name | config stem | task>``, the name made safe for paths."""
    name = cfg.env.run_name or (Path(config_path).stem if config_path else cfg.env.task)
    root = Path(cfg.env.output_root)
    if not root.is_absolute():
        root = Path.cwd() / root
    path = root / safe_name(name)
    return find_fresh_root(path) if fresh else path


def valid_item(item: Item) -> Item:
    """``item`` with its id, input, reference and meta valid UTF-8 (``skill.text.valid_text``);
    the same object when they were already."""
    before = (item.id, item.input, item.reference, item.meta)
    after = tuple(valid_data(v) for v in before)
    if all(a is b for a, b in zip(after, before, strict=True)):
        return item
    return Item(*after)


def load_splits(task: Task, *, require_test: bool = True) -> dict[str, list[Item]]:
    """All splits, checked before any model call: non-empty (test may be empty when
    ``require_test`` is False), unique ids, no leakage between them. Every item's text is made
    valid UTF-8 first (``valid_item``): task data is outside text."""
    items: dict[str, list[Item]] = {s: [valid_item(i) for i in task.load_split(s)] for s in SPLITS}
    for split, rows in items.items():
        if not rows and (require_test or split != "test"):
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


def resolved_spec(spec: ModelSpec, base_dir: str) -> ModelSpec:
    """A ``function`` model named by a relative ``file.py:attr`` is relative to the config."""
    if spec.provider == "function" and ".py:" in spec.model and not Path(spec.model).is_absolute():
        return spec.model_copy(update={"model": str(Path(base_dir) / spec.model)})
    return spec


def _build_backends(
    cfg: Config,
    optimizer: ModelBackend | None,
    target: ModelBackend | None,
    checks: Sequence[ModelSpec],
) -> tuple[ModelBackend, ModelBackend, list[ModelBackend]]:
    """The two roles' backends and the check targets' before metering. Identical specs share
    one instance and limiters (one model load, one connection pool: a check target that is the
    optimizer's model loads it once); given backends are used as they are."""
    limiters = LimiterRegistry()
    built: dict[str, ModelBackend] = {}

    def one(spec: ModelSpec) -> ModelBackend:
        spec = resolved_spec(spec, cfg.base_dir)
        key = spec.model_dump_json()
        if key not in built:
            built[key] = build_backend(spec, limiters, rng_seed=0)
        return built[key]

    opt = optimizer or one(cfg.models.optimizer)
    tgt = target or one(cfg.models.target)
    return opt, tgt, [one(spec) for spec in checks]


def check_targets_of(
    cfg: Config, store: CallCache, target: ModelBackend, metered: Sequence[MeteredBackend]
) -> list[CheckTarget]:
    """The run's check targets from their metered backends; a ConfigError when one answers
    under the main target's name or another check target's (the call cache keys calls by the
    backend's name, so they would share answers)."""
    problems: list[str] = []
    seen = {backend_name(target): "the main target's"}
    out = []
    for i, (spec, backend) in enumerate(zip(cfg.train.check_targets, metered, strict=True)):
        if backend.name in seen:
            problems.append(
                f"  train.check_targets[{i}]: its backend answers as {backend.name!r}, "
                f"{seen[backend.name]} name; give each target a model of its own"
            )
        seen.setdefault(backend.name, f"train.check_targets[{i}]'s")
        results = TargetResults(store, backend.name)
        out.append(CheckTarget(backend.name, backend, results, spec.temperature))
    if problems:
        raise ConfigError("\n".join(["train.check_targets: invalid configuration", *problems]))
    return out


def configured_specs(
    cfg: Config, optimizer: ModelBackend | None = None, target: ModelBackend | None = None
) -> list[ModelSpec]:
    """The model specs a session will build (roles given as objects excluded), check targets
    included."""
    roles = ((cfg.models.optimizer, optimizer), (cfg.models.target, target))
    specs = [spec for spec, given in roles if given is None] + list(cfg.train.check_targets)
    return [resolved_spec(spec, cfg.base_dir) for spec in specs]


def open_session(
    cfg: Config,
    store: CallCache,
    *,
    task: Task | None = None,
    optimizer: ModelBackend | None = None,
    target: ModelBackend | None = None,
    require_test: bool = True,
    with_check_targets: bool = False,
    items: dict[str, list[Item]] | None = None,
) -> Session:
    """Assemble the run's parts from ``cfg`` (``task``/``optimizer``/``target`` given as objects
    replace the configured ones); ``with_check_targets``: also ``train.check_targets`` (only
    training evaluates on them); ``items``: ``task``'s splits as ``load_splits`` already
    returned them (else they are loaded here)."""
    task = task or load_task(cfg.env.task, dict(cfg.env.options), Path(cfg.base_dir))
    if items is None:
        items = load_splits(task, require_test=require_test)
    task_abilities(task).check_ready()  # an environment that cannot be built: once, here
    checks = cfg.train.check_targets if with_check_targets else []
    if checks and (problems := check_target_problems(cfg)):  # before any backend is built
        raise ConfigError("\n".join(["train.check_targets: invalid configuration", *problems]))
    raw_opt, raw_tgt, raw_checks = _build_backends(cfg, optimizer, target, checks)
    prices = PriceTable({**PriceTable().prices, **cfg.budget.prices})
    budget = Budget(cfg.budget.max_cost_usd, cfg.budget.max_tokens, cfg.budget.max_calls)
    session = Session(
        cfg=cfg,
        task=task,
        items=items,
        store=store,
        optimizer=MeteredBackend(raw_opt, store, "optimizer", prices, budget),
        target=MeteredBackend(raw_tgt, store, "target", prices, budget),
        prices=prices,
    )
    metered = [MeteredBackend(b, store, CHECK_ROLE, prices, budget) for b in raw_checks]
    session.check_targets = check_targets_of(cfg, store, raw_tgt, metered) if checks else []
    abilities = task_abilities(task)
    # an LLM-judge scorer uses the optimizer model, metered (and budgeted) as the optimizer
    abilities.bind_judge(session.optimizer)
    hw = cfg.hardware
    if abilities.heavy:  # last: a Ray cluster started here is closed by session.aclose
        session.executor = open_executor(hw.executor, hw.ray_address, hw.ray_num_cpus_per_rollout)
        abilities.bind_executor(session.executor)
    elif hw.executor != "local":
        log.info(
            "hardware.executor %s: task %s has no heavy rollouts; run here", hw.executor, task.name
        )
    log.debug("session: task %s, models %s / %s", task.name, raw_opt, raw_tgt)
    return session


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
    task: Task | None = None,
    skill: str | None = None,
    require_test: bool = True,
    code: CodeProvenance | None = None,
) -> RunResult:
    """Train (or resume) one run; returns its directory and summary. Not inside a running event
    loop: use ``arun_training`` there. ``task``, ``optimizer``, ``target`` (objects) replace
    the configured ones; ``skill`` (text) replaces ``train.init_skill``; ``require_test=False``
    allows an empty test split (the summary then has no test scores); ``code`` is the code
    recorded as running it (default: skillgrad's own, ``runs/provenance.py``)."""
    return asyncio.run(
        arun_training(
            cfg,
            config_path=config_path,
            fresh=fresh,
            run_dir=run_dir,
            callbacks=callbacks,
            progress=progress,
            optimizer=optimizer,
            target=target,
            task=task,
            skill=skill,
            require_test=require_test,
            code=code,
        )
    )


async def arun_training(
    cfg: Config,
    *,
    config_path: str | None = None,
    fresh: bool = False,
    run_dir: Path | None = None,
    callbacks: Sequence[Callback] = (),
    progress: Progress | None = None,
    optimizer: ModelBackend | None = None,
    target: ModelBackend | None = None,
    task: Task | None = None,
    skill: str | None = None,
    require_test: bool = True,
    code: CodeProvenance | None = None,
) -> RunResult:
    """``run_training`` inside a running event loop (Jupyter, an async application)."""
    # a local model that is not installed stops here, before a run directory is made
    check_models(configured_specs(cfg, optimizer, target))
    run = RunDir(run_dir or run_dir_for(cfg, config_path, fresh))
    store: CallCache | None = None
    try:
        task = task or load_task(cfg.env.task, dict(cfg.env.options), Path(cfg.base_dir))
        items = load_splits(task, require_test=require_test)
        # a resumed run keeps a setting whose default changed since it started
        cfg = keep_run_settings(cfg, run.stored_config())
        # takes the run directory's writer lock
        resumed = run.create_or_check(cfg.redacted_json(), items, defaults=config_defaults())
        store = CallCache(run.paths.calls_db)
        try:
            session = open_session(
                cfg,
                store,
                task=task,
                optimizer=optimizer,
                target=target,
                require_test=require_test,
                with_check_targets=True,
                items=items,  # loaded once, above: the run directory checked them
            )
        except SkillgradError:
            if not resumed:  # nothing ran: a corrected config starts here afresh
                store.close()
                store = None
                run.discard_new()
            raise
        if cfg.trackers:
            from skillgrad.trackers import build_trackers

            callbacks = [*callbacks, *build_trackers(cfg.trackers, run.root)]
        progress = progress or NullProgress()
        progress.set_usage_source(_totals(store))  # bars show tokens and cost so far
        ctx = RunContext(
            session=session,
            run=run,
            steps_per_epoch=cfg.train.steps_per_epoch
            or math.ceil(len(session.items["train"]) / cfg.train.batch_size),
            callbacks=callbacks,
            progress=progress,
            code=code or code_provenance(),
        )
        try:
            if skill is None:
                skill = initial_skill_text(cfg.train.init_skill, cfg.base_dir)
            summary = await train(ctx, skill)
        except (BudgetExceeded, ModelError, SystemicFailure, NoHeadroom) as exc:
            await _drain(session)  # calls still in flight land in the ledger first
            _stopped(ctx, exc)
            raise
        finally:
            await session.aclose()
    finally:
        if store is not None:
            store.close()
        run.close()
    return RunResult(run.root, summary)


def _totals(store: CallCache) -> Callable[[], dict[str, float]]:
    return lambda: store.totals()["all"]


async def _drain(session: Session) -> None:
    """Let every metered backend's calls in flight come back (``MeteredBackend.drain``)."""
    for backend in (session.target, session.optimizer):
        drain = getattr(backend, "drain", None)
        if drain is not None:
            await drain()


def _stopped(ctx: RunContext, exc: Exception) -> None:
    """Record a clean stop: the last checkpoint stands; a partial summary says why."""
    status = (
        "budget_exhausted"
        if isinstance(exc, BudgetExceeded)
        else "no_headroom"
        if isinstance(exc, NoHeadroom)
        else "stopped"
    )
    log.warning("run stopped (%s): %s", status, exc)
    ctx.emit("stopped", status=status, error=f"{type(exc).__name__}: {exc}")
    state = ctx.run.load_state(TrainState.from_json)
    if state is None:
        return
    write_summary(ctx, state, None, status=status, stop_reason=str(exc))


__all__ = [
    "RunResult",
    "Session",
    "arun_training",
    "configured_specs",
    "load_splits",
    "open_session",
    "resolved_spec",
    "run_dir_for",
    "run_training",
    "safe_name",
]
