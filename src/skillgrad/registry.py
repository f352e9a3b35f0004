"""Finding tasks, scorers and model providers by name: entry points (groups
``skillgrad.tasks``, ``skillgrad.scorers`` and ``skillgrad.providers``), built-in scorer names,
or ``module:attr`` / ``file.py:attr``.

Scorer lookup lives with the scorers (``skillgrad.scorers.load_scorer``) and is re-exported here.
Built-in tasks are registered exactly like third-party ones (in pyproject's entry points), so a
user's own task or scorer in their own file works without touching skillgrad.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.models.registry import PROVIDER_GROUP, get_provider, provider_names
from skillgrad.plugins import call_factory, did_you_mean, resolve_object
from skillgrad.scorers import SCORER_GROUP, load_scorer, scorer_names
from skillgrad.tasks.base import Task

TASK_GROUP = "skillgrad.tasks"


def _entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


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
