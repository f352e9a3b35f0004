"""Finding tasks, scorers and model providers by name: entry points (groups
``skillgrad.tasks``, ``skillgrad.scorers`` and ``skillgrad.providers``, looked up by
``plugins.load_plugin``), or ``module:attr`` / ``file.py:attr``.

Scorer lookup lives with the scorers (``skillgrad.scorers.load_scorer``) and is re-exported here.
Built-ins are registered exactly like third-party ones (in pyproject's entry points), so a
user's own task or scorer in their own file works without touching skillgrad.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.models.registry import PROVIDER_GROUP, get_provider, provider_names
from skillgrad.plugins import call_factory, load_plugin, resolve_object
from skillgrad.scorers import SCORER_GROUP, load_scorer, scorer_names
from skillgrad.tasks.base import Task

TASK_GROUP = "skillgrad.tasks"


def load_task(name: str, options: dict[str, Any], base_dir: Path | None = None) -> Task:
    """Build the task ``name`` (registered name or ``module:attr``) with its ``options``.
    ``base_dir`` (the config's folder) resolves relative paths, and is passed to the task as
    ``base_dir`` when its factory takes one and the options do not set it."""
    factory = load_plugin(TASK_GROUP, name, "task", paths=True, base_dir=base_dir)
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
]
