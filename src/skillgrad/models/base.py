"""The ModelBackend Protocol: the one seam every provider implements.

A backend has exactly one required method, ``complete``. Retry, rate limiting, caching and cost
metering are wrappers around any backend (``models/wrappers/``),
never code inside one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from skillgrad.types import ChatRequest, Completion


@runtime_checkable
class ModelBackend(Protocol):
    """Contract:

    - ``complete`` sends one chat request and returns the model's answer with token usage.
    - It never mutates ``request``.
    - When ``request.response_schema`` is set, the backend does its best to return JSON text
      matching it (constrained decoding, a server's ``response_format``, or the schema in the
      prompt); the caller always validates.
    - Transient failures (timeouts, 408/409/429/5xx, truncated bodies) raise
      ``TransientModelError``; failures a retry cannot fix (400/401/403/404, a missing key or
      extra) raise ``PermanentModelError`` with a message that says how to fix them.

    Optional attributes a backend may provide (looked up with ``getattr``):
    ``name`` (``"provider:model"``, used in cache keys and reports) and
    ``count_tokens(text) -> int`` (the model's own tokenizer).
    """

    async def complete(self, request: ChatRequest) -> Completion: ...


def backend_name(backend: object) -> str:
    """The ``provider:model`` name of a backend, or its class name if it has none."""
    return str(getattr(backend, "name", None) or type(backend).__name__)


def token_counter(backend: object) -> Callable[[str], int] | None:
    """The model's own tokenizer, found on the backend or any backend it wraps (``.inner``)."""
    seen = 0
    while backend is not None and seen < 16:
        counter = getattr(backend, "count_tokens", None)
        if callable(counter):
            return counter
        backend = getattr(backend, "inner", None)
        seen += 1
    return None


__all__ = ["ModelBackend", "backend_name", "token_counter"]
