"""Real calls through build_backend(provider=openai_compatible) to a local fake server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`
from tests.servers import serve

from skillgrad.errors import PermanentModelError
from skillgrad.models.registry import aclose_backend, build_backend
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.metering import MeteredBackend
from skillgrad.models.wrappers.ratelimit import LimiterRegistry
from skillgrad.runs.cache import CallCache
from skillgrad.types import ChatRequest, Message

SCHEMA = {
    "title": "Answer",
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


def spec_for(base_url: str, model: str = "qwen2.5-7b", **kw: Any) -> ModelSpec:
    return ModelSpec(provider="openai_compatible", model=model, base_url=base_url, **kw)


def ask(text: str, **kw: Any) -> ChatRequest:
    return ChatRequest(messages=(Message("system", "Be terse."), Message("user", text)), **kw)


async def test_plain_call_fills_text_usage_and_sends_parameters() -> None:
    with serve() as server:
        backend = build_backend(spec_for(server.base_url), LimiterRegistry())
        out = await backend.complete(ask("hello there", temperature=0.3, stop=("END",)))
        assert backend.name == "openai_compatible:qwen2.5-7b"
        assert out.text == "hello there"
        assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens == 3
        assert out.finish_reason == "stop" and out.model == "qwen2.5-7b"
        body = server.requests[0].body
        assert body["messages"][0] == {"role": "system", "content": "Be terse."}
        assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.3, 512, 0)
        assert body["stop"] == ["END"] and "response_format" not in body
        assert server.requests[0].headers["authorization"] == "Bearer sk-no-key-required"


async def test_response_schema_uses_json_schema_mode() -> None:
    with serve(reply=lambda body: {"answer": "42"}) as server:
        backend = build_backend(spec_for(server.base_url), LimiterRegistry())
        out = await backend.complete(ask("What is it?", response_schema=SCHEMA))
        assert json.loads(out.text) == {"answer": "42"}
        rf = server.requests[0].body["response_format"]
        assert rf["type"] == "json_schema"
        assert rf["json_schema"] == {"name": "Answer", "schema": SCHEMA, "strict": False}


async def test_tools_are_native_and_tool_calls_come_back_as_dicts() -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "paris"}'},
    }
    tool = {
        "type": "function",
        "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
    }
    with serve(tool_call=call) as server:
        backend = build_backend(spec_for(server.base_url), LimiterRegistry())
        out = await backend.complete(ask("Where?", tools=(tool,)))
        assert out.tool_calls == (call,) and out.finish_reason == "tool_calls"
        assert isinstance(out.tool_calls[0], dict)
        assert server.requests[0].body["tools"] == [tool]
        # a bare function description is wrapped into the OpenAI tool shape
        await backend.complete(ask("Again", tools=(tool["function"],)))
        assert server.requests[1].body["tools"] == [tool]


async def test_reasoning_model_shape() -> None:
    with serve() as server:
        spec = spec_for(server.base_url, model="o4-mini", reasoning_effort="low", max_tokens=900)
        backend = build_backend(spec, LimiterRegistry())
        out = await backend.complete(
            ask("think first END then more", temperature=0.5, stop=("END",))
        )
        body = server.requests[0].body
        assert body["max_completion_tokens"] == 900 and body["reasoning_effort"] == "low"
        assert "max_tokens" not in body and "temperature" not in body
        # `stop` is not sent to reasoning models; the text is cut client-side instead
        assert "stop" not in body and out.text == "think first "


async def test_options_headers_and_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", "secret-1")
    with serve(api_key="secret-1") as server:
        spec = spec_for(
            server.base_url,
            api_key_env="LOCAL_LLM_KEY",
            options={"top_k": 20, "headers": {"X-Team": "skills"}},
        )
        await build_backend(spec, LimiterRegistry()).complete(ask("hi"))
        rec = server.requests[0]
        assert rec.body["top_k"] == 20 and rec.headers["x-team"] == "skills"
        monkeypatch.setenv("LOCAL_LLM_KEY", "wrong")
        with pytest.raises(PermanentModelError, match=r"401.*\$LOCAL_LLM_KEY") as info:
            await build_backend(spec, LimiterRegistry()).complete(ask("hi"))
        assert "wrong" not in str(info.value)  # never echo the secret


async def test_metered_calls_are_cached_and_ledgered(tmp_path: Path) -> None:
    with serve() as server:
        cache = CallCache(tmp_path / "calls.sqlite")
        raw = build_backend(spec_for(server.base_url), LimiterRegistry())
        backend = MeteredBackend(raw, cache, role="target")
        first = await backend.complete(ask("same question"))
        second = await backend.complete(ask("same question"))
        assert first.text == second.text and second.cached and not first.cached
        assert server.count() == 1
        assert cache.totals()["target"]["calls"] == 1
        cache.close()


async def test_aclose_backend_closes_the_sdk_connection_pool(tmp_path: Path) -> None:
    with serve() as server:
        backend = build_backend(spec_for(server.base_url), LimiterRegistry())
        cache = CallCache(tmp_path / "calls.sqlite")
        metered = MeteredBackend(backend, cache, role="target")
        await metered.complete(ask("hi"))
        wire = backend.inner.inner  # type: ignore[attr-defined]
        assert not wire.client.is_closed()
        await aclose_backend(metered)
        assert wire.client.is_closed()
        cache.close()
