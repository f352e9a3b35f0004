"""Anthropic Messages API backend on the official ``anthropic`` SDK (``skillgrad[anthropic]``).

System messages go to the top-level ``system``; tool calls and results map to ``tool_use`` /
``tool_result`` blocks and come back in OpenAI shape. Structured output is a forced tool call
whose ``input_schema`` is the response schema (schema in the prompt when that is not possible).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from skillgrad.errors import PermanentModelError, TransientModelError
from skillgrad.models import structured
from skillgrad.models.clients import (
    Endpoint,
    extra_body,
    reported_usage,
    require_env,
    sdk_error,
)
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Completion, Message

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


def _tool_use_block(call: dict[str, Any]) -> dict[str, Any]:
    fn = call.get("function") or {}
    args = fn.get("arguments") or "{}"
    return {
        "type": "tool_use",
        "id": call.get("id", ""),
        "name": fn.get("name", ""),
        "input": json.loads(args) if isinstance(args, str) else args,
    }


def to_anthropic_messages(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, messages) in Anthropic's shape."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id or "",
                "content": m.content,
            }
            out.append({"role": "user", "content": [block]})
        elif m.role == "assistant" and m.tool_calls:
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": m.content}] if m.content else []
            )
            blocks.extend(_tool_use_block(dict(c)) for c in m.tool_calls)
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m.role, "content": m.content})
    return system, out


def to_anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """OpenAI ``{"type": "function", "function": {...}}`` (or a bare function) -> Anthropic."""
    if "input_schema" in tool:
        return dict(tool)
    fn = tool.get("function", tool)
    out = {"name": fn["name"], "input_schema": fn.get("parameters") or {"type": "object"}}
    if fn.get("description"):
        out["description"] = fn["description"]
    return out


def _accepts(fn: Any, param: str) -> bool:
    try:
        return param in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True


class AnthropicBackend:
    def __init__(self, spec: ModelSpec, client: Any | None = None) -> None:
        env = spec.api_key_env or "ANTHROPIC_API_KEY"
        self.name = f"anthropic:{spec.model}"
        self.model = spec.model
        self.max_tokens = spec.max_tokens
        self.body = extra_body(spec)
        self.endpoint = Endpoint("anthropic", spec.model, spec.base_url or ANTHROPIC_BASE_URL, env)
        if client is None:
            try:
                import anthropic
            except ImportError:
                raise PermanentModelError(
                    f"{self.name} needs the anthropic SDK: pip install 'skillgrad[anthropic]'"
                ) from None
            headers = spec.options.get("headers")
            client = anthropic.AsyncAnthropic(
                api_key=require_env(env, "anthropic", spec.model),
                base_url=self.endpoint.base_url,
                timeout=spec.timeout_s,
                max_retries=0,
                default_headers=headers if isinstance(headers, dict) else None,
            )
        self.client = client
        # newer SDKs dropped `temperature` from messages.create; older ones (and the API) take it
        self._takes_temperature = _accepts(client.messages.create, "temperature")

    def _kwargs(self, request: ChatRequest) -> tuple[dict[str, Any], str | None]:
        """Request arguments and the name of the forced response tool (if any)."""
        schema = request.response_schema
        forced = (
            schema is not None and not request.tools and schema.get("type", "object") == "object"
        )
        if schema is not None and not forced:
            request = structured.with_schema_in_prompt(request)
        system, messages = to_anthropic_messages(request.messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens if self.max_tokens is not None else request.max_tokens,
            "messages": messages,
        }
        if self._takes_temperature:
            kwargs["temperature"] = request.temperature
        if system:
            kwargs["system"] = system
        if request.stop:
            kwargs["stop_sequences"] = list(request.stop)
        tools = [to_anthropic_tool(t) for t in request.tools]
        tool_name = None
        if forced and schema is not None:
            tool_name = structured.schema_name(schema)
            tools.append(
                {
                    "name": tool_name,
                    "description": "Give your final answer by calling this tool.",
                    "input_schema": schema,
                }
            )
            kwargs["tool_choice"] = {"type": "tool", "name": tool_name}
        if tools:
            kwargs["tools"] = tools
        if self.body:
            kwargs["extra_body"] = self.body
        return kwargs, tool_name

    async def aclose(self) -> None:
        """Close the SDK's HTTP connection pool (call before the event loop ends)."""
        await self.client.close()

    async def complete(self, request: ChatRequest) -> Completion:
        kwargs, tool_name = self._kwargs(request)
        try:
            response = await self.client.messages.create(**kwargs)
        except Exception as exc:
            mapped = sdk_error(exc, self.endpoint)
            if mapped is None:
                raise
            raise mapped from exc
        return self._completion(response, tool_name, request.response_schema is not None)

    def _completion(self, response: Any, tool_name: str | None, wants_json: bool) -> Completion:
        blocks = getattr(response, "content", None)
        if blocks is None:
            raise TransientModelError(f"{self.name}: malformed response without content")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for block in blocks:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use" and block.name == tool_name:
                texts = [json.dumps(block.input, ensure_ascii=False)]
            elif block.type == "tool_use":
                calls.append(
                    {
                        "id": block.id,
                        "type": "function",
                        "function": {"name": block.name, "arguments": json.dumps(block.input)},
                    }
                )
        text = "".join(texts)
        if wants_json:
            text = structured.normalise_json_text(text)
        reason = str(getattr(response, "stop_reason", None) or "end_turn")
        if tool_name is not None and reason == "tool_use":
            reason = "end_turn"  # the forced answer tool is the final answer, not a tool call
        return Completion(
            text=text,
            usage=reported_usage(response, "input_tokens", "output_tokens"),
            model=str(getattr(response, "model", "") or self.model),
            finish_reason=_STOP_REASONS.get(reason, reason),
            tool_calls=tuple(calls),
        )


__all__ = ["AnthropicBackend", "to_anthropic_messages", "to_anthropic_tool"]
