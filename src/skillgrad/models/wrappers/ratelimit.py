"""Per-endpoint rate limits shared by every role and stage that calls the same endpoint.

An ``EndpointLimiter`` caps requests in flight (a semaphore), requests per minute and tokens per
minute (token buckets; tokens estimated before a call and corrected with actual usage after),
and pauses the whole endpoint when the server says Retry-After. A ``LimiterRegistry`` (owned by
one run, never a module global) maps endpoint keys to limiters.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from skillgrad.errors import TransientModelError
from skillgrad.models.base import ModelBackend, backend_name
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Completion


class TokenBucket:
    """``rate_per_minute`` units refilled continuously, holding at most ``capacity`` units.

    ``acquire`` waits (FIFO) until ``amount`` units are there; ``credit`` gives units back or
    (negative) charges extra after the fact, so the level may go below zero.
    """

    def __init__(
        self,
        rate_per_minute: float,
        capacity: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate_per_minute <= 0:
            raise ValueError(f"rate_per_minute must be > 0, got {rate_per_minute}")
        self.rate = rate_per_minute / 60.0
        self.capacity = float(capacity if capacity is not None else rate_per_minute)
        self.level = self.capacity
        self._clock = clock
        self._stamp = clock()
        self._lock: asyncio.Lock | None = None

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, amount: float) -> None:
        amount = min(amount, self.capacity)  # a huge request must still be able to go
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            self._refill()
            while self.level < amount:
                await asyncio.sleep((amount - self.level) / self.rate)
                self._refill()
            self.level -= amount

    def credit(self, amount: float) -> None:
        self._refill()
        self.level = min(self.capacity, self.level + amount)


def estimate_tokens(request: ChatRequest) -> int:
    """Prompt characters / 4 plus the completion budget: a deliberately high estimate."""
    chars = sum(len(m.content) for m in request.messages)
    if request.response_schema is not None:
        chars += len(str(request.response_schema))
    return chars // 4 + 1 + request.max_tokens


class EndpointLimiter:
    def __init__(
        self,
        max_concurrency: int = 8,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.max_concurrency = max_concurrency
        self.requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None
        self.in_flight = 0
        self.peak_in_flight = 0
        self.paused_until = 0.0
        self._slots: asyncio.Semaphore | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_concurrency)
        return self._slots

    def pause(self, seconds: float) -> None:
        """Hold every new request to this endpoint for ``seconds`` (a server's Retry-After)."""
        self.paused_until = max(self.paused_until, time.monotonic() + seconds)

    async def run(self, backend: ModelBackend, request: ChatRequest) -> Completion:
        estimate = estimate_tokens(request)
        async with self._semaphore():
            wait = self.paused_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if self.requests is not None:
                await self.requests.acquire(1)
            if self.tokens is not None:
                await self.tokens.acquire(estimate)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                completion = await backend.complete(request)
            except TransientModelError as exc:
                if exc.retry_after:
                    self.pause(exc.retry_after)
                raise
            finally:
                self.in_flight -= 1
        if self.tokens is not None:
            self.tokens.credit(estimate - completion.usage.total_tokens)
        return completion


def endpoint_key(spec: ModelSpec) -> str:
    """Calls that share this key share one limiter (same server, whatever the role)."""
    if spec.provider == "azure":
        return f"azure:{spec.azure_endpoint or spec.base_url}:{spec.azure_deployment or spec.model}"
    if spec.base_url:
        return spec.base_url.rstrip("/")
    if spec.provider == "llamacpp":
        return f"llamacpp:{spec.model_path or spec.model}"
    return spec.provider


class LimiterRegistry:
    """Endpoint key -> EndpointLimiter for one run. The first spec seen for a key sets its
    limits; later specs for the same endpoint share them."""

    def __init__(self) -> None:
        self._limiters: dict[str, EndpointLimiter] = {}

    def get(self, spec: ModelSpec) -> EndpointLimiter:
        key = endpoint_key(spec)
        if key not in self._limiters:
            self._limiters[key] = EndpointLimiter(
                spec.max_concurrency, spec.requests_per_minute, spec.tokens_per_minute
            )
        return self._limiters[key]

    def __contains__(self, key: str) -> bool:
        return key in self._limiters

    def __len__(self) -> int:
        return len(self._limiters)


class LimitedBackend:
    def __init__(self, inner: ModelBackend, limiter: EndpointLimiter) -> None:
        self.inner = inner
        self.limiter = limiter
        self.name = backend_name(inner)

    def __getattr__(self, item: str) -> Any:
        if item == "count_tokens":
            return getattr(self.inner, item)
        raise AttributeError(item)

    async def complete(self, request: ChatRequest) -> Completion:
        return await self.limiter.run(self.inner, request)


__all__ = [
    "EndpointLimiter",
    "LimitedBackend",
    "LimiterRegistry",
    "TokenBucket",
    "endpoint_key",
    "estimate_tokens",
]
