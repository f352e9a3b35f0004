"""Retry with exponential backoff and full jitter around any backend.

Retries ``TransientModelError`` (and attempts that exceed the per-attempt timeout), honouring a
server's Retry-After; ``PermanentModelError`` passes through at once. Jitter comes from a
``random.Random`` the caller seeds, so tests are deterministic.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from skillgrad.errors import TransientModelError
from skillgrad.models.base import ModelBackend, backend_name
from skillgrad.types import ChatRequest, Completion

log = logging.getLogger(__name__)

# Never sleep longer than this for a single Retry-After, whatever the server asks.
MAX_RETRY_AFTER_S = 300.0


class RetryBackend:
    """``inner`` with up to ``max_retries`` retries (``max_retries + 1`` attempts in all).

    Counters: ``calls`` (complete() calls), ``attempts``, ``retries``, ``gave_up``, and
    ``delays`` (every backoff slept, in seconds) for tests and reports.
    """

    def __init__(
        self,
        inner: ModelBackend,
        max_retries: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        timeout_s: float | None = None,
        *,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.inner = inner
        self.name = backend_name(inner)
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout_s = timeout_s
        self.rng = rng or random.Random(0)
        self._sleep = sleep
        self.calls = 0
        self.attempts = 0
        self.retries = 0
        self.gave_up = 0
        self.delays: list[float] = []

    def __getattr__(self, item: str) -> Any:
        # forward only the optional tokenizer of the ModelBackend protocol
        if item == "count_tokens":
            return getattr(self.inner, item)
        raise AttributeError(item)

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Full jitter: uniform(0, min(max_delay, base * 2**attempt)), at least Retry-After."""
        delay = self.rng.uniform(0.0, min(self.max_delay, self.base_delay * (2**attempt)))
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER_S))
        return delay

    async def _attempt(self, request: ChatRequest) -> Completion:
        self.attempts += 1
        if self.timeout_s is None:
            return await self.inner.complete(request)
        try:
            async with asyncio.timeout(self.timeout_s):  # no extra task, unlike wait_for
                return await self.inner.complete(request)
        except TimeoutError:
            raise TransientModelError(
                f"{self.name}: no answer within timeout_s={self.timeout_s:g}s "
                "(raise models.<role>.timeout_s for slow models)"
            ) from None

    async def complete(self, request: ChatRequest) -> Completion:
        self.calls += 1
        for attempt in range(self.max_retries + 1):
            try:
                return await self._attempt(request)
            except TransientModelError as exc:
                if attempt >= self.max_retries:
                    self.gave_up += 1
                    raise TransientModelError(
                        f"{self.name}: gave up after {attempt + 1} attempts "
                        f"(max_retries={self.max_retries}); last error: {exc}",
                        exc.retry_after,
                    ) from exc
                delay = self.backoff(attempt, exc.retry_after)
                log.debug("%s: retry %d in %.2fs after: %s", self.name, attempt + 1, delay, exc)
            self.retries += 1
            self.delays.append(delay)
            await self._sleep(delay)
        raise AssertionError("unreachable")  # the loop always returns or raises


__all__ = ["MAX_RETRY_AFTER_S", "RetryBackend"]
