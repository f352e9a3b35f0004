"""Model providers and the backend factory. Providers are registered exactly like tasks and
scorers: entry-point group ``skillgrad.providers`` (the built-ins are registered in skillgrad's
own pyproject, one module each under ``models/providers/``).

Each provider is one module that declares a ``Provider``: its name, how to build the raw backend
from a ``ModelSpec``, which ``ModelSpec`` fields it reads, whether it is remote (then the run
wraps it in ``retry(limit(raw))``) or in-process (called directly), and the pip extra it needs.
Adding a provider is one new file plus one entry point, e.g. in your own pyproject::

    [project.entry-points."skillgrad.providers"]
    mycloud = "my_package.mycloud:PROVIDER"

``build_backend`` adds ``retry(limit(raw))`` when the provider declares itself remote, and
nothing for in-process providers. The caller (the run's session) wraps the result in
``MeteredBackend`` as the outermost layer, and passes one ``LimiterRegistry`` per run so roles
sharing an endpoint share its limits.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from skillgrad.errors import PermanentModelError
from skillgrad.models.base import ModelBackend
from skillgrad.models.spec import PROVIDER_GROUP, ModelSpec, provider_names
from skillgrad.models.wrappers.ratelimit import LimitedBackend, LimiterRegistry
from skillgrad.models.wrappers.retry import RetryBackend
from skillgrad.plugins import load_plugin
from skillgrad.redact import redact_json, remember_env, remember_known_envs, remember_url_password

log = logging.getLogger(__name__)


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
    provider = load_plugin(
        PROVIDER_GROUP,
        name,
        "model provider",
        hint=(
            " (write 'provider:model'; register your own in the "
            f"{PROVIDER_GROUP!r} entry-point group)"
        ),
        error=PermanentModelError,
    )
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


def build_raw_backend(spec: ModelSpec, provider: Provider | None = None) -> ModelBackend:
    """The provider's own backend, without retry or rate limiting. First remembers the secrets
    the spec names (its ``api_key_env`` value, the conventional key variables, header and
    option values under secret names) so no message or file will carry them."""
    remember_known_envs()
    remember_env(spec.api_key_env)
    remember_url_password(spec.base_url)
    redact_json(spec.options)  # remembers values under secret names (api-key headers...)
    return (provider or get_provider(spec.provider)).build(spec)


def build_backend(spec: ModelSpec, limiters: LimiterRegistry, *, rng_seed: int = 0) -> ModelBackend:
    """``RetryBackend(LimitedBackend(raw, limiters.get(spec)))`` for a remote provider; the raw
    backend for an in-process one (llama.cpp, functions: nothing to retry or rate limit).

    Retries use ``spec.max_retries`` and a per-attempt ``spec.timeout_s``; the jitter RNG is
    seeded with ``rng_seed`` so a run's backoff schedule is reproducible.
    """
    provider = get_provider(spec.provider)
    raw = build_raw_backend(spec, provider)
    log.debug("%s: %s provider", spec.name, "remote" if provider.remote else "in-process")
    if not provider.remote:
        return raw
    limited = LimitedBackend(raw, limiters.get(spec))
    return RetryBackend(
        limited,
        max_retries=spec.max_retries,
        timeout_s=spec.timeout_s,
        rng=random.Random(rng_seed),
    )


async def aclose_backend(backend: object) -> None:
    """Close every layer of a wrapped backend that holds connections (``aclose``), walking
    ``.inner`` from the outermost wrapper (MeteredBackend included) to the raw backend.

    Call it before the event loop that used the backend ends, so the SDKs' connection pools
    are not closed from a dead loop."""
    seen: set[int] = set()
    layer: object | None = backend
    while layer is not None and id(layer) not in seen:
        seen.add(id(layer))
        # the class's own method: wrappers forward attributes via __getattr__, and a
        # forwarded aclose would close the same layer twice
        close = getattr(type(layer), "aclose", None)
        if close is not None:
            await close(layer)
        layer = getattr(layer, "inner", None)


def check_models(specs: Iterable[ModelSpec]) -> None:
    """Each provider's cheap ``check`` (a local model installed and verified...), once per
    distinct spec: called before a run, an evaluation or a sweep creates anything."""
    seen: set[str] = set()
    for spec in specs:
        key = spec.model_dump_json()
        if key in seen:
            continue
        seen.add(key)
        provider = get_provider(spec.provider)
        if provider.check is not None:
            provider.check(spec)


def parse_model_arg(value: str | dict[str, Any] | ModelSpec) -> ModelSpec:
    """``"openai:gpt-4o-mini"`` (or a dict / spec) -> ModelSpec, checking the provider."""
    spec = ModelSpec.parse(value)
    get_provider(spec.provider)
    return spec


__all__ = [
    "PROVIDER_GROUP",
    "REMOTE_OPTIONS",
    "Provider",
    "aclose_backend",
    "build_backend",
    "build_raw_backend",
    "check_models",
    "get_provider",
    "missing_sdk",
    "parse_model_arg",
    "provider_names",
]
