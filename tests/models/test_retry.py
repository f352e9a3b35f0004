"""RetryBackend: backoff with seeded full jitter, Retry-After, per-attempt timeout, no retry on
permanent errors."""

from __future__ import annotations

import asyncio
import random

import pytest

from skillgrad.errors import ModelError, PermanentModelError, TransientModelError
from skillgrad.models.wrappers.retry import RetryBackend
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Completion, Message

REQ = ChatRequest(messages=(Message("user", "hello"),))


class Flaky:
    """Raises the given errors in order, then answers."""

    def __init__(self, errors: list[ModelError], delay: float = 0.0) -> None:
        self.errors = list(errors)
        self.delay = delay
        self.calls = 0
        self.name = "flaky:model"

    async def complete(self, request: ChatRequest) -> Completion:
        self.calls += 1
        if self.errors:
            err = self.errors.pop(0)
            if self.delay:
                await asyncio.sleep(self.delay)
            raise err
        return Completion(text="ok")


class Recorder:
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)


async def test_transient_errors_are_retried_until_success() -> None:
    inner = Flaky([TransientModelError("a"), TransientModelError("b")])
    sleep = Recorder()
    backend = RetryBackend(inner, max_retries=3, base_delay=1.0, rng=random.Random(7), sleep=sleep)
    out = await backend.complete(REQ)
    assert out.text == "ok"
    assert (inner.calls, backend.attempts, backend.retries) == (3, 3, 2)
    assert backend.name == "flaky:model"
    # full jitter: uniform(0, base * 2**attempt), reproducible from the seed
    rng = random.Random(7)
    assert sleep.slept == [rng.uniform(0, 1.0), rng.uniform(0, 2.0)]


async def test_backoff_is_capped_and_honours_retry_after() -> None:
    backend = RetryBackend(Flaky([]), base_delay=1.0, max_delay=4.0, rng=random.Random(1))
    assert all(backend.backoff(10, None) <= 4.0 for _ in range(50))
    assert backend.backoff(0, 3.5) >= 3.5
    assert backend.backoff(0, 10_000) == 300.0  # a silly Retry-After is capped


async def test_retry_after_sets_the_minimum_delay() -> None:
    inner = Flaky([TransientModelError("429", retry_after=2.5)])
    sleep = Recorder()
    await RetryBackend(inner, base_delay=0.01, sleep=sleep).complete(REQ)
    assert sleep.slept == [2.5]


async def test_permanent_error_is_not_retried() -> None:
    inner = Flaky([PermanentModelError("fix your key")])
    sleep = Recorder()
    backend = RetryBackend(inner, max_retries=5, sleep=sleep)
    with pytest.raises(PermanentModelError, match="fix your key"):
        await backend.complete(REQ)
    assert inner.calls == 1 and sleep.slept == [] and backend.retries == 0


async def test_gives_up_after_max_retries_with_the_last_error() -> None:
    inner = Flaky([TransientModelError(f"boom {i}") for i in range(10)])
    backend = RetryBackend(inner, max_retries=2, sleep=Recorder())
    with pytest.raises(TransientModelError, match=r"gave up after 3 attempts.*boom 2"):
        await backend.complete(REQ)
    assert inner.calls == 3 and backend.gave_up == 1


async def test_per_attempt_timeout_is_transient_and_retried() -> None:
    slow_then_fast = iter([0.5, 0.0])

    def answer(request: ChatRequest) -> str:
        return "fast"

    class SlowOnce(FunctionBackend):
        async def complete(self, request: ChatRequest) -> Completion:
            await asyncio.sleep(next(slow_then_fast))
            return await super().complete(request)

    inner = SlowOnce(answer)
    backend = RetryBackend(inner, max_retries=1, timeout_s=0.05, sleep=Recorder())
    out = await backend.complete(REQ)
    assert out.text == "fast" and backend.attempts == 2 and backend.retries == 1


async def test_timeout_message_names_the_setting() -> None:
    inner = FunctionBackend(lambda r: "late", latency=0.5)
    backend = RetryBackend(inner, max_retries=0, timeout_s=0.02)
    with pytest.raises(TransientModelError, match=r"timeout_s=0\.02"):
        await backend.complete(REQ)


async def test_count_tokens_is_forwarded_only_when_inner_has_it() -> None:
    with_tok = RetryBackend(FunctionBackend(lambda r: "x"))
    assert with_tok.count_tokens("a b c") == 3
    assert getattr(RetryBackend(Flaky([])), "count_tokens", None) is None


def test_negative_max_retries_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryBackend(Flaky([]), max_retries=-1)
