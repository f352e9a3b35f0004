"""``provider: function``: a Python function (or backend object) as the model, in process.

``FunctionBackend`` answers every call with ``fn(request)``; ``model`` in the spec is
``module:attr`` (or ``file.py:attr``) naming a backend object, a backend class (built with the
spec's ``options`` as keyword arguments), or a plain function of the request returning text, a
dict (sent as JSON) or a ``Completion``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import Any

from skillgrad.errors import PermanentModelError
from skillgrad.models.base import ModelBackend
from skillgrad.types import ChatRequest, Completion, Usage

Reply = str | dict[str, Any] | Completion


def as_completion(value: Reply, request: ChatRequest) -> Completion:
    """Text, a dict (as JSON) or a Completion -> Completion, with whitespace-token usage."""
    if isinstance(value, Completion):
        return value
    text = value if isinstance(value, str) else json.dumps(value)
    prompt = sum(len(m.content.split()) for m in request.messages)
    return Completion(text=text, usage=Usage(prompt, len(text.split())), model="fake")


class FunctionBackend:
    """Answers every call with ``fn(request)`` (text, dict or Completion); counts its calls.

    ``fn`` may be a coroutine function. ``latency`` (seconds) is slept before answering, to
    exercise concurrency.
    """

    def __init__(
        self,
        fn: Callable[[ChatRequest], Any],
        name: str = "function:fake",
        latency: float = 0.0,
    ) -> None:
        self.fn = fn
        self.name = name
        self.latency = latency
        self.calls: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> Completion:
        if self.latency:
            await asyncio.sleep(self.latency)
        value = self.fn(request)
        if inspect.isawaitable(value):
            value = await value
        result = as_completion(value, request)
        self.calls.append(request)
        return result

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def as_backend(obj: Any, name: str, options: dict[str, Any] | None = None) -> ModelBackend:
    """A backend object as is (named ``name`` if it has no name), a backend class built with
    ``options``, or a plain function of the request wrapped in ``FunctionBackend``."""
    if inspect.isclass(obj):
        obj = obj(**(options or {}))
    if hasattr(obj, "complete"):
        if not getattr(obj, "name", None):
            obj.name = name
        backend: ModelBackend = obj
        return backend
    if callable(obj):
        return FunctionBackend(obj, name=name)
    raise PermanentModelError(
        f"{name}: {obj!r} is neither a backend (with async complete) nor a function"
    )


__all__ = ["FunctionBackend", "as_backend", "as_completion"]
