"""EndpointLimiter, TokenBucket and LimiterRegistry: concurrency, rpm/tpm, shared endpoints."""

from __future__ import annotations

import asyncio
import time

import pytest

from skillgrad.errors import TransientModelError
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.ratelimit import (
    EndpointLimiter,
    LimitedBackend,
    LimiterRegistry,
    TokenBucket,
    endpoint_key,
    estimate_tokens,
)
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Completion, Message, Usage

REQ = ChatRequest(messages=(Message("user", "x" * 400),), max_tokens=100)


async def test_in_flight_requests_never_exceed_max_concurrency() -> None:
    limiter = EndpointLimiter(max_concurrency=3)
    backend = LimitedBackend(FunctionBackend(lambda r: "ok", latency=0.02), limiter)
    await asyncio.gather(*(backend.complete(REQ) for _ in range(12)))
    assert limiter.peak_in_flight == 3 and limiter.in_flight == 0


async def test_requests_per_minute_spaces_calls() -> None:
    # capacity 1 and 1200/min: one call at once, then one every 50 ms
    limiter = EndpointLimiter(max_concurrency=10)
    limiter.requests = TokenBucket(1200, capacity=1)
    backend = LimitedBackend(FunctionBackend(lambda r: "ok"), limiter)
    started = time.monotonic()
    await asyncio.gather(*(backend.complete(REQ) for _ in range(5)))
    elapsed = time.monotonic() - started
    assert 0.19 <= elapsed < 1.0


async def test_token_bucket_is_corrected_with_actual_usage() -> None:
    limiter = EndpointLimiter(tokens_per_minute=10_000)
    assert limiter.tokens is not None
    estimate = estimate_tokens(REQ)
    assert estimate == 400 // 4 + 1 + 100

    def small(request: ChatRequest) -> Completion:
        return Completion(text="ok", usage=Usage(20, 5))

    await LimitedBackend(FunctionBackend(small), limiter).complete(REQ)
    # charged the estimate first, then refunded everything above the 25 tokens really used
    assert 10_000 - 25 - 1 <= limiter.tokens.level <= 10_000 - 25 + 1


async def test_tokens_per_minute_makes_callers_wait() -> None:
    bucket = TokenBucket(60_000, capacity=100)  # 1000 tokens/s, burst 100
    started = time.monotonic()
    await bucket.acquire(100)
    await bucket.acquire(100)  # must wait ~0.1 s for the refill
    assert time.monotonic() - started >= 0.09
    bucket.credit(-50)  # charged extra after the fact: the level may go negative
    assert bucket.level < 0


async def test_retry_after_pauses_the_whole_endpoint() -> None:
    limiter = EndpointLimiter(max_concurrency=4)
    failures = iter([True])

    def reply(request: ChatRequest) -> str:
        if next(failures, False):
            raise TransientModelError("429", retry_after=0.2)
        return "ok"

    backend = LimitedBackend(FunctionBackend(reply), limiter)
    with pytest.raises(TransientModelError):
        await backend.complete(REQ)
    started = time.monotonic()
    assert (await backend.complete(REQ)).text == "ok"
    assert time.monotonic() - started >= 0.15


def test_registry_shares_limiters_per_endpoint() -> None:
    registry = LimiterRegistry()
    a = ModelSpec(provider="openai_compatible", model="m1", base_url="http://127.0.0.1:9/v1/")
    b = ModelSpec(provider="openai_compatible", model="m2", base_url="http://127.0.0.1:9/v1")
    c = ModelSpec(provider="openai", model="gpt-4o-mini", max_concurrency=2)
    assert registry.get(a) is registry.get(b)
    assert registry.get(c) is not registry.get(a)
    assert registry.get(c).max_concurrency == 2
    assert len(registry) == 2 and "openai" in registry
    assert LimiterRegistry().get(a) is not registry.get(a)  # two runs, two registries


def test_endpoint_keys() -> None:
    azure = ModelSpec(provider="azure", model="gpt", azure_endpoint="https://r.example")
    assert endpoint_key(azure) == "azure:https://r.example:gpt"
    assert endpoint_key(ModelSpec(model="smollm2-135m")) == "llamacpp:smollm2-135m"


def test_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        EndpointLimiter(max_concurrency=0)
    with pytest.raises(ValueError, match="rate_per_minute"):
        TokenBucket(0)
