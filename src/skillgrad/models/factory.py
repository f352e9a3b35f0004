"""Build a ready-to-use backend from a ModelSpec, by the provider's declared abilities.

``build_raw_backend`` asks the registered ``Provider`` (entry-point group
``skillgrad.providers``) for its raw backend; ``build_backend`` adds ``retry(limit(raw))`` when
the provider declares itself remote, and nothing for in-process providers. The caller (the run's
session) wraps the result in ``MeteredBackend`` as the outermost layer, and passes one
``LimiterRegistry`` per run so roles sharing an endpoint share its limits.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable
from typing import Any

from skillgrad.models.base import ModelBackend
from skillgrad.models.registry import Provider, get_provider
from skillgrad.models.wrappers.ratelimit import LimitedBackend, LimiterRegistry
from skillgrad.models.wrappers.retry import RetryBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.redact import redact_json, remember_env, remember_known_envs, remember_url_password

log = logging.getLogger(__name__)


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
    "aclose_backend",
    "build_backend",
    "build_raw_backend",
    "check_models",
    "parse_model_arg",
]
