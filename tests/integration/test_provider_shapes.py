"""Azure and Anthropic request shapes, checked by a local server that speaks each wire."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import anthropic
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`
from tests.servers import serve

from skillgrad.errors import PermanentModelError
from skillgrad.models.registry import build_backend
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.ratelimit import LimiterRegistry
from skillgrad.types import ChatRequest, Message

SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
REQ = ChatRequest(
    messages=(Message("system", "You shout."), Message("user", "apple")),
    max_tokens=64,
    temperature=0.2,
)


def azure_spec(endpoint: str, **kw: str) -> ModelSpec:
    base = {
        "provider": "azure",
        "model": "gpt-4o-mini",
        "azure_endpoint": endpoint,
        "azure_deployment": "my-deployment",
        "api_version": "2024-10-21",
        "api_key_env": "TEST_AZURE_KEY",
    }
    return ModelSpec.model_validate({**base, **kw})


async def test_azure_request_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_AZURE_KEY", "az-secret")
    with serve(api_key="az-secret") as server:
        backend = build_backend(azure_spec(server.root_url), LimiterRegistry())
        out = await backend.complete(REQ)
        assert out.text == "apple" and backend.name == "azure:gpt-4o-mini"
        rec = server.requests[0]
        assert rec.path == "/openai/deployments/my-deployment/chat/completions"
        assert rec.query["api-version"] == "2024-10-21"
        assert rec.headers["api-key"] == "az-secret"
        assert "authorization" not in rec.headers
        assert rec.body["messages"][0] == {"role": "system", "content": "You shout."}


async def test_azure_default_key_env_and_wrong_deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az-default")
    with serve(api_key="az-default") as server:
        spec = azure_spec(server.root_url, azure_deployment="missing", api_key_env="")
        spec = spec.model_copy(update={"api_key_env": None})
        backend = build_backend(spec, LimiterRegistry())
        with pytest.raises(PermanentModelError, match=r"404.*azure_deployment.*api_version"):
            await backend.complete(REQ)
        assert server.requests[0].headers["api-key"] == "az-default"
        assert server.count() == 1


async def test_azure_wrong_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_AZURE_KEY", "wrong")
    with serve(api_key="az-secret") as server:
        backend = build_backend(azure_spec(server.root_url), LimiterRegistry())
        with pytest.raises(PermanentModelError, match=r"401.*\$TEST_AZURE_KEY"):
            await backend.complete(REQ)


def anthropic_spec(root_url: str) -> ModelSpec:
    return ModelSpec(
        provider="anthropic",
        model="claude-haiku-4-5",
        base_url=root_url,
        api_key_env="TEST_ANTHROPIC_KEY",
    )


async def test_anthropic_request_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", "ant-secret")
    with serve(api_key="ant-secret") as server:
        backend = build_backend(anthropic_spec(server.root_url), LimiterRegistry())
        out = await backend.complete(REQ)
        assert out.text == "apple" and out.finish_reason == "stop"
        assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens == 3
        assert backend.name == "anthropic:claude-haiku-4-5"
        rec = server.requests[0]
        assert rec.path == "/v1/messages"
        sent_key = rec.headers.get("x-api-key") or rec.headers["authorization"]
        assert sent_key in ("ant-secret", "Bearer ant-secret")
        assert rec.headers["anthropic-version"]
        assert rec.body["system"] == "You shout."
        assert rec.body["messages"] == [{"role": "user", "content": "apple"}]
        assert rec.body["max_tokens"] == 64
        # the installed SDK decides whether temperature is still a Messages parameter
        create = anthropic.AsyncAnthropic(api_key="unused").messages.create
        takes = "temperature" in inspect.signature(create).parameters
        assert rec.body.get("temperature") == (0.2 if takes else None)


async def test_anthropic_structured_output_is_a_forced_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", "k")
    with serve(reply=lambda body: {"word": "APPLE"}) as server:
        backend = build_backend(anthropic_spec(server.root_url), LimiterRegistry())
        out = await backend.complete(
            ChatRequest(messages=REQ.messages, response_schema=SCHEMA, max_tokens=64)
        )
        assert json.loads(out.text) == {"word": "APPLE"} and out.finish_reason == "stop"
        body = server.requests[0].body
        assert body["tool_choice"] == {"type": "tool", "name": "response"}
        assert body["tools"][0]["input_schema"] == SCHEMA


async def test_anthropic_tools_and_tool_results_are_mapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", "k")
    call = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}
    messages = (
        Message("user", "go"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "result 1", tool_call_id="t1"),
    )
    with serve() as server:
        backend = build_backend(anthropic_spec(server.root_url), LimiterRegistry())
        await backend.complete(ChatRequest(messages=messages, tools=(tool,)))
        body = server.requests[0].body
        assert body["tools"] == [
            {"name": "f", "description": "d", "input_schema": {"type": "object"}}
        ]
        assert body["messages"][1]["content"] == [
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}
        ]
        assert body["messages"][2] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "result 1"}],
        }


async def test_anthropic_wrong_key_is_permanent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", "wrong")
    with serve(api_key="right") as server:
        backend = build_backend(anthropic_spec(server.root_url), LimiterRegistry())
        with pytest.raises(PermanentModelError, match=r"401.*\$TEST_ANTHROPIC_KEY"):
            await backend.complete(REQ)
        assert server.count() == 1
