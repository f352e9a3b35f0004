"""Build a ready-to-use backend from a ModelSpec: ``retry(limit(raw))``.

The caller (the training loop) wraps the result in ``MeteredBackend`` as the outermost layer,
and passes one ``LimiterRegistry`` per run so roles sharing an endpoint share its limits.
"""

from __future__ import annotations

import inspect
import random
from typing import Any

from skillgrad.errors import ConfigError, PermanentModelError
from skillgrad.models.base import ModelBackend
from skillgrad.models.ratelimit import LimitedBackend, LimiterRegistry
from skillgrad.models.retry import RetryBackend
from skillgrad.models.spec import PROVIDERS, ModelSpec


def _llamacpp(spec: ModelSpec) -> ModelBackend:
    try:
        from skillgrad.models.llamacpp import LlamaCppBackend
    except ImportError as exc:
        raise PermanentModelError(
            f"{spec.name}: the in-process llama.cpp backend is not available ({exc}). "
            "Install it with: pip install 'skillgrad[local]'"
        ) from exc
    backend: ModelBackend = LlamaCppBackend(spec)
    return backend


def _function(spec: ModelSpec) -> ModelBackend:
    """``provider: function``: ``model`` is ``module:attr`` (or ``file.py:attr``) naming a
    backend object, a backend class (built with ``options`` as keyword arguments), or a plain
    function of the request returning text, a dict or a Completion."""
    from skillgrad.registry import resolve_object
    from skillgrad.testing import FunctionBackend

    try:
        obj = resolve_object(spec.model)
    except ConfigError as exc:
        raise PermanentModelError(f"{spec.name}: {exc}") from exc
    if inspect.isclass(obj):
        obj = obj(**spec.options)
    if hasattr(obj, "complete"):
        if not getattr(obj, "name", None):
            obj.name = spec.name
        backend: ModelBackend = obj
        return backend
    if callable(obj):
        return FunctionBackend(obj, name=spec.name)
    raise PermanentModelError(
        f"{spec.name}: {spec.model!r} is neither a backend (with async complete) nor a function"
    )


def build_raw_backend(spec: ModelSpec) -> ModelBackend:
    """The provider's own backend, without retry or rate limiting."""
    if spec.provider in ("openai", "azure", "openai_compatible"):
        from skillgrad.models.openai_wire import OpenAIChatBackend

        return OpenAIChatBackend.from_spec(spec)
    if spec.provider == "anthropic":
        from skillgrad.models.anthropic_backend import AnthropicBackend

        return AnthropicBackend(spec)
    if spec.provider == "llamacpp":
        return _llamacpp(spec)
    if spec.provider == "function":
        return _function(spec)
    raise PermanentModelError(
        f"unknown model provider {spec.provider!r} (in {spec.name!r}). "
        f"Known providers: {', '.join(PROVIDERS)}."
    )


def build_backend(spec: ModelSpec, limiters: LimiterRegistry, *, rng_seed: int = 0) -> ModelBackend:
    """``RetryBackend(LimitedBackend(raw, limiters.get(spec)))`` for ``spec``.

    Retries use ``spec.max_retries`` and a per-attempt ``spec.timeout_s``; the jitter RNG is
    seeded with ``rng_seed`` so a run's backoff schedule is reproducible.
    """
    raw = build_raw_backend(spec)
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


def parse_model_arg(value: str | dict[str, Any] | ModelSpec) -> ModelSpec:
    """``"openai:gpt-4o-mini"`` (or a dict / spec) -> ModelSpec, checking the provider."""
    spec = ModelSpec.parse(value)
    if spec.provider not in PROVIDERS:
        raise PermanentModelError(
            f"unknown model provider {spec.provider!r} in {value!r}. "
            f"Known providers: {', '.join(PROVIDERS)} (write 'provider:model')."
        )
    return spec


__all__ = ["aclose_backend", "build_backend", "build_raw_backend", "parse_model_arg"]
