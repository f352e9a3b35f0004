"""Plugins: the one entry-point lookup (``load_plugin``, with a "did you mean"), and user objects
named ``package.module:attr`` or ``path/to/file.py:attr``.

Tasks, scorers, model providers and data bundles are all found here, built-ins exactly like
third-party ones (entry-point groups ``skillgrad.tasks``, ``skillgrad.scorers``,
``skillgrad.providers``, ``skillgrad.data``). A leaf module (it imports only
``skillgrad.errors``), so every room can use it without importing the registry.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError, SkillgradError


def did_you_mean(name: str, known: list[str]) -> str:
    """`` Did you mean 'x'?`` for the closest known name, or ''."""
    close = difflib.get_close_matches(name, known, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def plugin_names(group: str) -> list[str]:
    """Every name registered in the entry-point ``group``, sorted."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=group)})


def load_plugin(
    group: str,
    name: str,
    what: str,
    *,
    paths: bool = False,
    base_dir: Path | None = None,
    hint: str = "",
    error: type[SkillgradError] = ConfigError,
) -> Any:
    """The object registered as ``name`` in the entry-point ``group``; with ``paths`` also
    ``module:attr`` / ``file.py:attr`` (relative to ``base_dir``). An unknown name raises
    ``error`` naming the closest known one, every known one and ``hint``; an entry point that
    cannot be imported raises it saying so."""
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}
    if name in eps:
        try:
            return eps[name].load()
        except ImportError as exc:
            raise error(
                f"{what} {name!r} ({eps[name].value}) cannot be imported: {exc}. Install the "
                "package that provides it."
            ) from exc
    if paths and ":" in name:
        return resolve_object(name, base_dir)
    known = sorted(eps)
    if paths:
        hint = f"; or give 'package.module:attribute' / 'file.py:attribute'{hint}"
    raise error(
        f"unknown {what} {name!r}.{did_you_mean(name, known)} Known {what.split()[-1]}s: "
        f"{', '.join(known) or 'none'}{hint}."
    )


def import_file(path: Path, spec: str) -> Any:
    """Import one Python file as a module; one module per file, so loading a file twice yields
    the same classes. The file's folder goes first on ``sys.path`` (as ``python file.py`` puts
    it), so the file can import the modules next to it, at import time or later."""
    mod_id = f"skillgrad_user_{abs(hash(str(path.resolve())))}"
    if mod_id in sys.modules:
        return sys.modules[mod_id]
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    loaded = importlib.util.spec_from_file_location(mod_id, path)
    if loaded is None or loaded.loader is None:
        raise ConfigError(f"cannot import {path} (from {spec!r}): is it a Python file?")
    module = importlib.util.module_from_spec(loaded)
    sys.modules[mod_id] = module
    try:
        loaded.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[mod_id]
        raise ConfigError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def resolve_object(spec: str, base_dir: Path | None = None) -> Any:
    """Import ``package.module:attr`` or ``path/to/file.py:attr`` (relative to ``base_dir``)."""
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise ConfigError(f"{spec!r} is not of the form 'module:attribute' or 'file.py:attribute'")
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        if not path.exists():
            raise ConfigError(f"file {path} does not exist (from {spec!r})")
        module = import_file(path, spec)
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"cannot import module {module_name!r} for {spec!r}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        names = [n for n in dir(module) if not n.startswith("_")]
        hint = did_you_mean(attr, names)
        raise ConfigError(f"module {module_name!r} has no attribute {attr!r}.{hint}") from None


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


__all__ = [
    "call_factory",
    "did_you_mean",
    "import_file",
    "load_plugin",
    "plugin_names",
    "resolve_object",
]
