"""Finding tasks by name: entry points (group ``skillgrad.tasks``), built-ins, or ``module:attr``.

Built-in tasks are registered exactly like third-party ones (in pyproject's entry points), so a
user's own task in their own file works without touching skillgrad.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.tasks.base import Task


def _entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


def resolve_object(spec: str, base_dir: Path | None = None) -> Any:
    """Import ``package.module:attr`` or ``path/to/file.py:attr`` (relative to ``base_dir``)."""
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise ConfigError(f"{spec!r} is not of the form 'module:attribute' or 'file.py:attribute'")
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.exists():
            raise ConfigError(f"task file {path} does not exist (from {spec!r})")
        mod_id = f"skillgrad_user_{abs(hash(str(path.resolve())))}"
        loaded = importlib.util.spec_from_file_location(mod_id, path)
        if loaded is None or loaded.loader is None:
            raise ConfigError(f"cannot import {path}")
        module = importlib.util.module_from_spec(loaded)
        sys.modules[mod_id] = module
        loaded.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"cannot import module {module_name!r} for {spec!r}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"module {module_name!r} has no attribute {attr!r}") from None


def task_names() -> list[str]:
    return sorted(_entry_points("skillgrad.tasks"))


def load_task(name: str, options: dict[str, Any], base_dir: Path | None = None) -> Task:
    """Build the task ``name`` (registered name or ``module:attr``) with its ``options``."""
    eps = _entry_points("skillgrad.tasks")
    if name in eps:
        factory = eps[name].load()
    elif ":" in name:
        factory = resolve_object(name, base_dir)
    else:
        import difflib

        close = difflib.get_close_matches(name, list(eps), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown task {name!r}.{hint} Known tasks: {', '.join(sorted(eps))}; "
            "or give 'package.module:attribute' / 'file.py:attribute'."
        )
    try:
        task = factory(**options)
    except TypeError as exc:
        raise ConfigError(f"env.options do not fit task {name!r}: {exc}") from exc
    if not isinstance(task, Task):
        raise ConfigError(f"{name!r} did not produce a Task (needs load_split and rollout)")
    return task


__all__ = ["load_task", "resolve_object", "task_names"]
