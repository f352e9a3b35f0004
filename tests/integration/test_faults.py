"""Fault injection against a local server: transient faults are survived by RetryBackend,
permanent ones stop at once with a clear message, structured output learns its mode once."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`
from tests.servers import LLAMACPP_REJECTION, FakeLLMServer, Fault, serve

from skillgrad.errors import PermanentModelError, TransientModelError
from skillgrad.models.openai import OpenAIChatBackend
from skillgrad.models.registry import build_backend
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.ratelimit import LimitedBackend, LimiterRegistry
from skillgrad.models.wrappers.retry import RetryBackend
from skillgrad.types import ChatRequest, Message

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def backend_for(server: FakeLLMServer, **kw: Any) -> RetryBackend:
    spec = ModelSpec(
        provider="openai_compatible", model="m", base_url=server.base_url, timeout_s=1.0, **kw
    )
    backend = build_backend(spec, LimiterRegistry())
    assert isinstance(backend, RetryBackend)
    backend.base_delay = 0.01  # keep the test fast; the schedule itself is unit-tested
    return backend


def wire(backend: RetryBackend) -> OpenAIChatBackend:
    limited = backend.inner
    assert isinstance(limited, LimitedBackend) and isinstance(limited.inner, OpenAIChatBackend)
    return limited.inner


def ask(text: str = "ping", schema: dict[str, Any] | None = None) -> ChatRequest:
    return ChatRequest(messages=(Message("user", text),), response_schema=schema)


@pytest.mark.parametrize(
    "fault",
    [
        Fault(status=429, message="slow down"),
        Fault(status=500, message="internal error"),
        Fault(status=503, message="overloaded"),
        Fault(status=408, message="request timeout"),
        Fault(truncate=True),
        Fault(invalid_json=True),
        Fault(sleep=3.0),  # beyond timeout_s=1
    ],
    ids=["429", "500", "503", "408", "truncated", "invalid-json", "stall"],
)
async def test_transient_faults_are_survived(fault: Fault) -> None:
    with serve() as server:
        server.add_faults(fault, fault)
        backend = backend_for(server)
        out = await backend.complete(ask("survive"))
        assert out.text == "survive"
        assert server.count() == 3 and backend.retries == 2


async def test_retry_after_header_is_honoured() -> None:
    with serve() as server:
        server.add_faults(Fault(status=429, message="rate limited", retry_after=0.3))
        backend = backend_for(server)
        started = time.monotonic()
        assert (await backend.complete(ask("x"))).text == "x"
        assert time.monotonic() - started >= 0.3
        assert backend.delays and backend.delays[0] >= 0.3


async def test_persistent_transient_fault_gives_up_with_the_cause() -> None:
    with serve() as server:
        server.add_faults(*[Fault(status=502, message="bad gateway")] * 5)
        backend = backend_for(server, max_retries=2)
        with pytest.raises(TransientModelError, match=r"gave up after 3 attempts.*502"):
            await backend.complete(ask())
        assert server.count() == 3


@pytest.mark.parametrize(
    "status, message, expect",
    [
        (400, "max_tokens is too large", r"rejected the request \(HTTP 400\).*max_tokens is too"),
        (401, "bad key", r"API key was rejected \(401\)"),
        (403, "no access", r"permission denied \(403\) for model 'm'"),
        (404, "model m not found", r"not found \(404\).*model name 'm'.*base_url"),
    ],
)
async def test_permanent_faults_stop_at_once(status: int, message: str, expect: str) -> None:
    with serve() as server:
        server.add_faults(Fault(status=status, message=message))
        backend = backend_for(server)
        started = time.monotonic()
        with pytest.raises(PermanentModelError, match=expect) as info:
            await backend.complete(ask())
        assert server.base_url in str(info.value)
        assert server.count() == 1 and backend.retries == 0
        assert time.monotonic() - started < 1.0


async def test_connection_refused_is_transient() -> None:
    with serve() as server:
        url = server.base_url
    spec = ModelSpec(provider="openai_compatible", model="m", base_url=url, max_retries=1)
    backend = build_backend(spec, LimiterRegistry())
    assert isinstance(backend, RetryBackend)
    backend.base_delay = 0.01
    with pytest.raises(TransientModelError, match="connection failed"):
        await backend.complete(ask())


async def test_structured_fallback_learns_json_object_once() -> None:
    with serve(reject_modes=("json_schema",), reply=lambda b: {"n": 7}) as server:
        backend = backend_for(server)
        for _ in range(4):
            out = await backend.complete(ask("count", SCHEMA))
            assert json.loads(out.text) == {"n": 7}
        types = [r.body.get("response_format", {}).get("type") for r in server.requests]
        assert types == ["json_schema"] + ["json_object"] * 4  # one failing probe only
        assert wire(backend).structured_mode == "json_object"
        sent = server.requests[-1].body
        assert sent["response_format"]["schema"] == SCHEMA
        assert '"required": ["n"]' in sent["messages"][0]["content"]  # schema in the prompt
        assert LLAMACPP_REJECTION.format("json_schema") in wire(backend).mode_rejections[0]


async def test_structured_fallback_to_text_extracts_json_from_prose() -> None:
    def chatty(body: dict[str, Any]) -> str:
        return 'Sure! Here it is:\n```json\n{"n": 3}\n```'

    with serve(reject_modes=("json_schema", "json_object"), reply=chatty) as server:
        backend = backend_for(server)
        first = await backend.complete(ask("count", SCHEMA))
        second = await backend.complete(ask("again", SCHEMA))
        assert json.loads(first.text) == json.loads(second.text) == {"n": 3}
        assert [r.body.get("response_format", {}).get("type") for r in server.requests] == [
            "json_schema",
            "json_object",
            None,
            None,
        ]
        assert wire(backend).structured_mode == "text"


async def test_concurrent_first_calls_probe_the_mode_only_once() -> None:
    with serve(reject_modes=("json_schema",), reply=lambda b: {"n": 1}, latency=0.02) as server:
        backend = backend_for(server)
        outs = await asyncio.gather(*(backend.complete(ask(f"q{i}", SCHEMA)) for i in range(10)))
        assert all(json.loads(o.text) == {"n": 1} for o in outs)
        rejected = server.count(
            lambda r: r.body.get("response_format", {}).get("type") != "json_object"
        )
        assert rejected == 1 and server.count() == 11


async def test_unrelated_500_in_structured_mode_is_retried_not_downgraded() -> None:
    with serve(reply=lambda b: {"n": 2}) as server:
        server.add_faults(Fault(status=500, message="CUDA out of memory"))
        backend = backend_for(server)
        out = await backend.complete(ask("x", SCHEMA))
        assert json.loads(out.text) == {"n": 2}
        assert wire(backend).structured_mode == "json_schema" and backend.retries == 1
