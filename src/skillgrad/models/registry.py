"""Model providers, registered exactly like tasks and scorers: entry-point group
``skillgrad.providers`` (the built-ins are registered in skillgrad's own pyproject).

Each provider is one module that declares a ``Provider``: its name, how to build the raw backend
from a ``ModelSpec``, which ``ModelSpec`` fields it reads, whether it is remote (then the run
wraps it in ``retry(limit(raw))``) or in-process (called directly), and the pip extra it needs.
Adding a provider is one new file plus one entry point, e.g. in your own pyproject::

    [project.entry-points."skillgrad.providers"]
    mycloud = "my_package.mycloud:PROVIDER"
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skillgrad.errors import PermanentModelError
from skillgrad.plugins import did_you_mean
from skillgrad.models.spec import PROVIDER_GROUP, ModelSpec, provider_names

if TYPE_CHECKING:
    from skillgrad.models.base import ModelBackend


# the ModelSpec fields every remote provider reads: sampling, the time limit, the retry and
# rate-limit wrappers' settings, and the verbatim ``options`` (each provider adds its own)
REMOTE_OPTIONS = (
    "temperature",
    "max_tokens",
    "timeout_s",
    "max_retries",
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "options",
)


@dataclass(frozen=True)
class Provider:
    """What a provider module declares (contract for ``build``: it returns the raw backend or
    raises ``PermanentModelError`` saying what to set or install; it never retries)."""

    name: str
    build: Callable[[ModelSpec], ModelBackend]
    remote: bool
    """True for a network endpoint (retried and rate limited); False for in-process backends
    (llama.cpp, Python functions), which get neither."""
    options: tuple[str, ...] = ()
    """The ``ModelSpec`` fields it reads besides ``provider`` and ``model``."""
    extra: str | None = None
    """The ``skillgrad[extra]`` it needs, named in errors when its SDK is missing."""
    summary: str = ""
    check: Callable[[ModelSpec], None] | None = None
    """Optional, cheap, before any run starts: raise a ``SkillgradError`` saying how to fix
    what would stop ``build`` (e.g. a local model that is not installed); never loads it."""


def get_provider(name: str) -> Provider:
    """The ``Provider`` registered as ``name``, or a PermanentModelError listing the known ones."""
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=PROVIDER_GROUP)}
    if name not in eps:
        known = sorted(eps)
        raise PermanentModelError(
            f"unknown model provider {name!r}.{did_you_mean(name, known)} Known providers: "
            f"{', '.join(known)} (write 'provider:model'; register your own in the "
            f"{PROVIDER_GROUP!r} entry-point group)."
        )
    try:
        provider = eps[name].load()
    except ImportError as exc:
        raise PermanentModelError(
            f"model provider {name!r} ({eps[name].value}) cannot be imported: {exc}. Install the "
            "package that provides it."
        ) from exc
    if not isinstance(provider, Provider):
        raise PermanentModelError(
            f"entry point {name!r} in {PROVIDER_GROUP!r} is {type(provider).__name__}, "
            "not a skillgrad.models.registry.Provider"
        )
    return provider


def missing_sdk(spec_name: str, extra: str, exc: ImportError) -> PermanentModelError:
    """The error for a provider whose optional SDK is not installed."""
    return PermanentModelError(
        f"{spec_name}: this provider needs the '{extra}' extra ({exc}). "
        f"Install it with: pip install 'skillgrad[{extra}]'"
    )


__all__ = [
    "PROVIDER_GROUP",
    "REMOTE_OPTIONS",
    "Provider",
    "get_provider",
    "missing_sdk",
    "provider_names",
]
