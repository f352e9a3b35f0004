"""Which stage and step a model call belongs to, for the ledger (not part of the cache key).

The loop sets it with ``with call_context(stage="rollout", step=3):``; asyncio tasks inherit it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class CallContext:
    stage: str = ""
    step: int = 0


_DEFAULT = CallContext()  # frozen, so sharing it as the default is safe
_current: ContextVar[CallContext] = ContextVar("skillgrad_call_context", default=_DEFAULT)


def current_context() -> CallContext:
    return _current.get()


@contextmanager
def call_context(stage: str, step: int) -> Iterator[None]:
    token = _current.set(CallContext(stage, step))
    try:
        yield
    finally:
        _current.reset(token)


__all__ = ["CallContext", "call_context", "current_context"]
