"""The OpenAI chat wire: one backend for ``openai``, ``azure`` and ``openai_compatible``.

Sends a ChatRequest through the official SDK (its retries off), maps errors to transient or
permanent, handles reasoning models (``max_completion_tokens``, ``reasoning_effort``), native
tools, and structured output with a per-endpoint memory of which ``response_format`` works.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import Any

from openai.types.chat import ChatCompletion

from skillgrad.errors import PermanentModelError, TransientModelError
from skillgrad.models import structured
from skillgrad.models.clients import (
    Endpoint,
    azure_client,
    extra_body,
    openai_client,
    reported_usage,
    sdk_error,
)
from skillgrad.models.registry import REMOTE_OPTIONS, Provider
from skillgrad.models.spec import ModelSpec
from skillgrad.models.structured import StructuredMode
from skillgrad.types import ChatRequest, Completion

_REASONING = re.compile(r"(^|/)(o1|o3|o4|gpt-5)")


def is_reasoning_model(model: str, reasoning_effort: str | None = None) -> bool:
    """o1/o3/o4/gpt-5 families (also behind an OpenRouter-style ``vendor/`` prefix)."""
    return reasoning_effort is not None or bool(_REASONING.search(model.lower()))


def as_openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """Accept ``{"type": "function", "function": {...}}`` or a bare function description."""
    if tool.get("type") == "function" and "function" in tool:
        return dict(tool)
    if "input_schema" in tool:  # Anthropic shape
        fn = {k: v for k, v in tool.items() if k != "input_schema"}
        return {"type": "function", "function": {**fn, "parameters": tool["input_schema"]}}
    return {"type": "function", "function": dict(tool)}


def cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """``text`` up to the first stop sequence, as a server would have cut it."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[: min(cuts)] if cuts else text


class _ModeRejected(Exception):
    """The server refused the structured-output mode we sent (internal signal)."""


class OpenAIChatBackend:
    """``complete(request)`` over any OpenAI-chat-shaped server.

    ``structured_mode`` is the endpoint's remembered structured-output mode; it only moves down
    (json_schema -> json_object -> text) when the server rejects a mode, and one probe at a time
    runs until a mode has worked, so concurrent calls do not all pay for a failing mode.
    """

    def __init__(
        self,
        client: Any,
        endpoint: Endpoint,
        *,
        reasoning_effort: str | None = None,
        max_tokens: int | None = None,
        body: dict[str, Any] | None = None,
        structured_mode: StructuredMode = "json_schema",
    ) -> None:
        self.client = client
        self.endpoint = endpoint
        self.name = endpoint.name
        self.model = endpoint.model
        self.reasoning_effort = reasoning_effort
        self.reasoning = is_reasoning_model(endpoint.model, reasoning_effort)
        self.max_tokens = max_tokens
        self.body = dict(body or {})
        self.structured_mode: StructuredMode = structured_mode
        self.mode_confirmed = False
        self.mode_rejections: list[str] = []
        self._probe: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAIChatBackend:
        if spec.provider == "azure":
            client, endpoint = azure_client(spec)
        else:
            client, endpoint = openai_client(spec)
        mode = spec.options.get("structured_mode", "json_schema")
        if mode not in structured.MODES:
            raise PermanentModelError(
                f"{spec.name}: options.structured_mode={mode!r}; use one of {structured.MODES}"
            )
        return cls(
            client,
            endpoint,
            reasoning_effort=spec.reasoning_effort,
            max_tokens=spec.max_tokens,
            body=extra_body(spec),
            structured_mode=mode,
        )

    async def complete(self, request: ChatRequest) -> Completion:
        if request.response_schema is None:
            return await self._send(request, None)
        if self.mode_confirmed:
            return await self._structured(request)
        async with self._probe_lock():
            return await self._structured(request)

    def _probe_lock(self) -> asyncio.Lock:
        # one lock per event loop: a backend may outlive one asyncio.run()
        loop = asyncio.get_running_loop()
        if self._probe is None or self._probe[0] is not loop:
            self._probe = (loop, asyncio.Lock())
        return self._probe[1]

    async def _structured(self, request: ChatRequest) -> Completion:
        schema = request.response_schema
        assert schema is not None
        while True:
            mode = self.structured_mode
            sent = request if mode == "json_schema" else structured.with_schema_in_prompt(request)
            try:
                completion = await self._send(sent, structured.response_format(mode, schema))
            except _ModeRejected as exc:
                self._downgrade(mode, str(exc))
                continue
            self.mode_confirmed = True
            return replace(completion, text=structured.normalise_json_text(completion.text))

    def _downgrade(self, mode: StructuredMode, reason: str) -> None:
        nxt = structured.next_mode(mode)
        if nxt is None:
            raise PermanentModelError(
                f"{self.name}: structured output failed even as text: {reason}"
            )
        if self.structured_mode == mode:  # another task may have moved on already
            self.mode_rejections.append(f"{mode}: {reason[:200]}")
            self.structured_mode = nxt

    def _body(self, request: ChatRequest, rf: dict[str, Any] | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in request.messages],
        }
        limit = self.max_tokens if self.max_tokens is not None else request.max_tokens
        if self.reasoning:
            # reasoning models reject max_tokens and a non-default temperature
            kwargs["max_completion_tokens"] = limit
            if self.reasoning_effort:
                kwargs["reasoning_effort"] = self.reasoning_effort
        else:
            kwargs["max_tokens"] = limit
            kwargs["temperature"] = request.temperature
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.stop and not self.reasoning:  # reasoning models reject `stop`
            kwargs["stop"] = list(request.stop)
        if request.tools:
            kwargs["tools"] = [as_openai_tool(t) for t in request.tools]
        if rf is not None:
            kwargs["response_format"] = rf
        kwargs.update(self.body)  # provider options, verbatim
        return kwargs

    async def _send(self, request: ChatRequest, rf: dict[str, Any] | None) -> Completion:
        body = self._body(request, rf)
        try:
            # the SDK's documented low-level `post`: same auth, URLs (Azure deployments) and
            # errors as `chat.completions.create`, minus its TypedDict transform of the
            # params, which cost ~1 ms CPU per call (bench/README.md)
            response = await self.client.post(
                "/chat/completions", cast_to=ChatCompletion, body=body
            )
        except Exception as exc:
            mapped = sdk_error(exc, self.endpoint)
            if mapped is None:
                raise
            status = getattr(exc, "status_code", None)
            if rf is not None and structured.is_mode_rejection(status, str(exc)):
                raise _ModeRejected(str(exc)) from exc
            raise mapped from exc
        completion = chat_completion(response, self.endpoint)
        if request.stop and self.reasoning:
            completion = replace(completion, text=cut_at_stop(completion.text, request.stop))
        return completion

    async def aclose(self) -> None:
        """Close the SDK's HTTP connection pool (call before the event loop ends)."""
        await self.client.close()


def chat_completion(response: Any, ep: Endpoint) -> Completion:
    """An OpenAI-chat-shaped response (the SDK's object, or LiteLLM's) as a Completion: the first
    choice's text and tool calls, the reported usage; a TransientModelError when it has no
    choices."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise TransientModelError(f"{ep.name} at {ep.base_url}: malformed response without choices")
    choice = choices[0]
    message = choice.message
    calls = tuple(
        tc.model_dump(exclude_none=True) if hasattr(tc, "model_dump") else dict(tc)
        for tc in (getattr(message, "tool_calls", None) or ())
    )
    return Completion(
        text=message.content or "",
        usage=reported_usage(response),
        model=str(getattr(response, "model", "") or ep.model),
        finish_reason=str(choice.finish_reason or "stop"),
        tool_calls=calls,
    )


# the ModelSpec fields every provider on this wire reads (each provider's file adds its own)
COMMON_OPTIONS = (*REMOTE_OPTIONS, "reasoning_effort")


def wire_provider(
    name: str,
    summary: str,
    *,
    options: tuple[str, ...] = ("base_url", "api_key_env"),
    extra: str | None = None,
) -> Provider:
    """The ``Provider`` of an endpoint kind on this wire: remote, built by
    ``OpenAIChatBackend.from_spec``, reading its own ``options`` plus ``COMMON_OPTIONS``."""
    return Provider(
        name=name,
        build=OpenAIChatBackend.from_spec,
        remote=True,
        options=(*options, *COMMON_OPTIONS),
        extra=extra,
        summary=summary,
    )


__all__ = [
    "COMMON_OPTIONS",
    "OpenAIChatBackend",
    "as_openai_tool",
    "chat_completion",
    "cut_at_stop",
    "is_reasoning_model",
    "wire_provider",
]
