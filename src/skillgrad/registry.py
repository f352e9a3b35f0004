"""Finding tasks, scorers and model providers by name: entry points (groups
``skillgrad.tasks``, ``skillgrad.scorers`` and ``skillgrad.providers``), built-in scorer names,
or ``module:attr`` / ``file.py:attr``.

Built-in tasks are registered exactly like third-party ones (in pyproject's entry points), so a
user's own task or scorer in their own file works without touching skillgrad.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.importing import did_you_mean, resolve_object
from skillgrad.models.base import ModelBackend
from skillgrad.models.provider import PROVIDER_GROUP, get_provider, provider_names
from skillgrad.scorers import SCORERS, CallableScorer
from skillgrad.scorers.base import Scorer
from skillgrad.tasks.base import Task

TASK_GROUP = "skillgrad.tasks"
SCORER_GROUP = "skillgrad.scorers"


def _entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


def call_factory(
    factory: Callable[..., Any], options: dict[str, Any], what: str, **injected: Any
) -> Any:
    """Call ``factory(**options)``. Unknown option names fail with a "did you mean"; each
    ``injected`` value (e.g. ``base_dir``) is passed only when the factory takes a parameter of
    that name and the options do not already set it."""
    kwargs = dict(options)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins and some C types have no signature
        params = None
    if params is not None:
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        named = [n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
        unknown = [k for k in kwargs if k not in params]
        if unknown and not var_kw:
            shown = [n for n in named if n not in injected and not n.startswith("_")]
            raise ConfigError(
                f"unknown option {unknown[0]!r} for {what}.{did_you_mean(unknown[0], shown)} "
                f"Known options: {', '.join(shown) or '(none)'}"
            )
        for key, value in injected.items():
            if key in params and key not in kwargs and value is not None:
                kwargs[key] = value
    try:
        return factory(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"options do not fit {what}: {exc}") from exc


def task_names() -> list[str]:
    return sorted(_entry_points(TASK_GROUP))


def load_task(name: str, options: dict[str, Any], base_dir: Path | None = None) -> Task:
    """Build the task ``name`` (registered name or ``module:attr``) with its ``options``.
    ``base_dir`` (the config's folder) resolves relative paths, and is passed to the task as
    ``base_dir`` when its factory takes one and the options do not set it."""
    eps = _entry_points(TASK_GROUP)
    if name in eps:
        factory = eps[name].load()
    elif ":" in name:
        factory = resolve_object(name, base_dir)
    else:
        raise ConfigError(
            f"unknown task {name!r}.{did_you_mean(name, list(eps))} Known tasks: "
            f"{', '.join(sorted(eps))}; or give 'package.module:attribute' / 'file.py:attribute'."
        )
    task = call_factory(factory, options, f"task {name!r}", base_dir=base_dir)
    if not isinstance(task, Task):
        raise ConfigError(f"{name!r} did not produce a Task (needs load_split and rollout)")
    return task


def scorer_names() -> list[str]:
    """Built-in scorer names plus those registered in the ``skillgrad.scorers`` group."""
    return sorted(set(SCORERS) | set(_entry_points(SCORER_GROUP)))


def load_scorer(
    name: str,
    options: dict[str, Any] | None = None,
    base_dir: Path | None = None,
    backend: ModelBackend | None = None,
) -> Scorer:
    """Build scorer ``name`` (built-in, entry point, or ``module:attr``) with ``options``.
    A plain function found by ``module:attr`` is wrapped in the ``callable`` scorer."""
    options = dict(options or {})
    eps = _entry_points(SCORER_GROUP)
    if name in SCORERS:
        target: Any = SCORERS[name]
    elif name in eps:
        target = eps[name].load()
    elif ":" in name:
        target = resolve_object(name, base_dir)
    else:
        raise ConfigError(
            f"unknown scorer {name!r}.{did_you_mean(name, scorer_names())} Known scorers: "
            f"{', '.join(scorer_names())}; or give 'package.module:attribute' / "
            "'file.py:attribute'."
        )
    if isinstance(target, Scorer) and not inspect.isclass(target):
        if options:
            raise ConfigError(f"scorer {name!r} is an object; it takes no options {options}")
        return target
    what = f"scorer {name!r}"
    if inspect.isclass(target):
        scorer = call_factory(target, options, what, base_dir=base_dir, backend=backend)
    elif callable(target):
        fn_options = {"function": target, **options}
        scorer = call_factory(CallableScorer, fn_options, what, base_dir=base_dir)
    else:
        raise ConfigError(f"{name!r} is neither a Scorer class, a scorer, nor a function")
    if not isinstance(scorer, Scorer):
        raise ConfigError(f"{name!r} did not produce a Scorer (needs score(output, item))")
    return scorer


__all__ = [
    "PROVIDER_GROUP",
    "SCORER_GROUP",
    "TASK_GROUP",
    "call_factory",
    "get_provider",
    "load_scorer",
    "load_task",
    "provider_names",
    "resolve_object",
    "scorer_names",
    "task_names",
]
