"""Cost metering, budgets and the cache wrapper: cross-cutting behaviour around any backend.

``MeteredBackend`` is the outermost wrapper of each role's backend: a cache hit is free and
returns at once; a miss checks the budget, calls the inner backend (itself wrapped in retry and
rate limiting), prices the usage and writes cache entry, ledger line and running totals in one
transaction, and returns the completion as stored (a key the server echoed is ``***``). It is
also where outside text meets the run: the request and the reply are made valid UTF-8
(``skill.text.valid_text``) before the key is computed, the call is sent or the row is written.
Per-call overhead does not grow with the ledger (``bench/bench_overhead.py``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from skillgrad.errors import BudgetExceeded
from skillgrad.models.base import ModelBackend, backend_name
from skillgrad.models.context import current_context
from skillgrad.runs.cache import CallCache, call_key
from skillgrad.skill.text import valid_data, valid_text
from skillgrad.types import ChatRequest, Completion, Message, Usage

# USD per million tokens (input, output). Extend or override with `budget.prices` in config.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "openai:gpt-4o": (2.5, 10.0),
    "openai:gpt-4o-mini": (0.15, 0.6),
    "openai:gpt-4.1": (2.0, 8.0),
    "openai:gpt-4.1-mini": (0.4, 1.6),
    "openai:gpt-4.1-nano": (0.1, 0.4),
    "openai:o3": (2.0, 8.0),
    "openai:o4-mini": (1.1, 4.4),
    "openai:gpt-5": (1.25, 10.0),
    "openai:gpt-5-mini": (0.25, 2.0),
    "anthropic:claude-sonnet-4-5": (3.0, 15.0),
    "anthropic:claude-opus-4-1": (15.0, 75.0),
    "anthropic:claude-haiku-4-5": (1.0, 5.0),
}


@dataclass(frozen=True)
class PriceTable:
    prices: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def cost(self, backend: str, usage: Usage) -> float:
        """USD for one call. Local and unknown models cost 0 (reported as unpriced)."""
        price = self.prices.get(backend)
        if price is None:
            # azure deployments and compatible servers are priced by model name alone
            model = backend.split(":", 1)[-1]
            price = next((p for k, p in self.prices.items() if k.split(":", 1)[-1] == model), None)
        if price is None:
            return 0.0
        return (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1e6

    def is_priced(self, backend: str) -> bool:
        model = backend.split(":", 1)[-1]
        return backend in self.prices or any(k.endswith(":" + model) for k in self.prices)


@dataclass(frozen=True)
class Budget:
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_calls: int | None = None

    def check(self, cache: CallCache) -> None:
        """Raise BudgetExceeded if the ledger has reached any limit (checked before each call).

        Reads the ledger's running totals (``CallCache.totals()``, O(1)), so the check costs the
        same at call 30,000 as at call 1."""
        t = cache.totals()["all"]
        tokens = t["prompt_tokens"] + t["completion_tokens"]
        if self.max_calls is not None and t["calls"] >= self.max_calls:
            raise BudgetExceeded(
                f"budget.max_calls={self.max_calls} reached ({int(t['calls'])} calls made). "
                "Raise it (--set budget.max_calls=N) and re-run the same command to resume."
            )
        if self.max_tokens is not None and tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"budget.max_tokens={self.max_tokens} reached ({int(tokens)} tokens used). "
                "Raise it (--set budget.max_tokens=N) and re-run the same command to resume."
            )
        if self.max_cost_usd is not None and t["cost"] >= self.max_cost_usd:
            raise BudgetExceeded(
                f"budget.max_cost_usd={self.max_cost_usd} reached (${t['cost']:.4f} spent). "
                "Raise it (--set budget.max_cost_usd=X) and re-run the same command to resume."
            )


class MeteredBackend:
    """Cache + ledger + budget around ``inner`` for one role (``"optimizer"`` or ``"target"``)."""

    def __init__(
        self,
        inner: ModelBackend,
        cache: CallCache,
        role: str,
        prices: PriceTable | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.role = role
        self.prices = prices or PriceTable()
        self.budget = budget or Budget()
        self.name = backend_name(inner)
        self.fresh_calls = 0
        self.cache_hits = 0
        self.in_flight = 0

    async def drain(self, timeout: float = 60.0) -> None:
        """Wait (at most ``timeout`` seconds) until the calls already sent have come back and
        are in the ledger: a run stopping (the budget ran out in another call) keeps what the
        endpoint answered, so a resume never pays for it again."""
        deadline = time.monotonic() + timeout
        while self.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    async def complete(self, request: ChatRequest) -> Completion:
        request = valid_request(request)
        key = call_key(self.name, request)
        hit = self.cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit
        self.budget.check(self.cache)
        started = time.monotonic()
        self.in_flight += 1
        try:
            completion = valid_completion(await self.inner.complete(request))
        finally:
            self.in_flight -= 1
        ctx = current_context()
        stored = self.cache.put(
            key,
            self.name,
            request,
            completion,
            role=self.role,
            stage=ctx.stage,
            step=ctx.step,
            cost=self.prices.cost(self.name, completion.usage),
            latency_s=time.monotonic() - started,
        )
        self.fresh_calls += 1
        return stored  # as a resume will read it back: secrets redacted


def _valid_message(m: Message) -> Message:
    return replace(
        m,
        content=valid_text(m.content),
        name=valid_data(m.name),
        tool_calls=valid_data(m.tool_calls),
        tool_call_id=valid_data(m.tool_call_id),
    )


def valid_request(request: ChatRequest) -> ChatRequest:
    """``request`` with every string in it valid UTF-8 (the messages carry task data,
    observations and earlier replies); equal to ``request`` when it was valid already."""
    return replace(
        request,
        messages=tuple(_valid_message(m) for m in request.messages),
        response_schema=valid_data(request.response_schema),
        tools=valid_data(request.tools),
        stop=valid_data(request.stop),
    )


def valid_completion(completion: Completion) -> Completion:
    """A model's reply with its text, tool calls and model name valid UTF-8 (a server may send
    a lone surrogate as a JSON escape)."""
    return replace(
        completion,
        text=valid_text(completion.text),
        tool_calls=valid_data(completion.tool_calls),
        model=valid_text(completion.model),
        finish_reason=valid_text(completion.finish_reason),
    )


__all__ = [
    "DEFAULT_PRICES",
    "Budget",
    "MeteredBackend",
    "PriceTable",
    "valid_completion",
    "valid_request",
]
