"""Structured (JSON) output across servers that support it in different ways.

Three modes, tried in order until one is accepted by the server: ``json_schema`` (native
constrained output), ``json_object`` (JSON mode, schema also in the prompt), ``text`` (schema in
the prompt only, JSON extracted tolerantly). Backends remember the mode that works per endpoint.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Literal

from skillgrad.types import ChatRequest, Message

StructuredMode = Literal["json_schema", "json_object", "text"]
MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "text")

# Words a server's error uses when it does not understand the structured-output request
# (OpenAI-style 400s, vLLM/SGLang 400s, llama.cpp server's 500 "response_format type must be ...").
_REJECTION_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar")

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def next_mode(mode: StructuredMode) -> StructuredMode | None:
    """The mode to fall back to after ``mode`` was rejected, or None after ``text``."""
    i = MODES.index(mode)
    return MODES[i + 1] if i + 1 < len(MODES) else None


def is_mode_rejection(status: int | None, message: str) -> bool:
    """Whether an HTTP error means "this server does not support this response_format".

    Auth, not-found, timeout and rate-limit statuses are never a rejection of the mode.
    """
    if status is None or status in (401, 403, 404, 408, 409, 429) or not 400 <= status < 600:
        return False
    low = message.lower()
    return any(word in low for word in _REJECTION_WORDS)


def schema_name(schema: dict[str, Any]) -> str:
    """A name for the schema as OpenAI wants it (``^[a-zA-Z0-9_-]{1,64}$``)."""
    raw = str(schema.get("title") or "response")
    clean = re.sub(r"[^a-zA-Z0-9_-]", "_", raw)[:64]
    return clean or "response"


def schema_instruction(schema: dict[str, Any]) -> str:
    return (
        "Respond with only a JSON value (no prose, no code fences) that matches this JSON "
        "schema:\n" + json.dumps(schema, ensure_ascii=False, sort_keys=True)
    )


def with_schema_in_prompt(request: ChatRequest) -> ChatRequest:
    """A copy of ``request`` whose system prompt ends with the schema instruction."""
    assert request.response_schema is not None
    note = schema_instruction(request.response_schema)
    messages = list(request.messages)
    if messages and messages[0].role == "system":
        messages[0] = replace(messages[0], content=f"{messages[0].content}\n\n{note}".strip())
    else:
        messages.insert(0, Message(role="system", content=note))
    return replace(request, messages=tuple(messages))


def response_format(mode: StructuredMode, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The OpenAI-wire ``response_format`` for ``mode`` (None for plain text)."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": schema_name(schema), "schema": schema, "strict": False},
        }
    if mode == "json_object":
        # "schema" is ignored by OpenAI and honoured by llama.cpp server / vLLM as a grammar
        return {"type": "json_object", "schema": schema}
    return None


def _first_json_value(text: str) -> Any:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        return value
    raise ValueError("no JSON object or array found")


def extract_json(text: str) -> Any:
    """Parse JSON out of model text: plain JSON, a code fence, or JSON after leading prose.

    Raises ``ValueError`` (with the start of the text) when no JSON value can be found.
    """
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return json.loads(block.strip())
        except json.JSONDecodeError:
            continue
    try:
        return _first_json_value(stripped)
    except ValueError:
        raise ValueError(f"no JSON value found in model output: {stripped[:200]!r}") from None


def normalise_json_text(text: str) -> str:
    """The extracted JSON re-serialised, or ``text`` unchanged when none can be found
    (the caller validates and re-asks with the error)."""
    try:
        return json.dumps(extract_json(text), ensure_ascii=False)
    except ValueError:
        return text


__all__ = [
    "MODES",
    "StructuredMode",
    "extract_json",
    "is_mode_rejection",
    "next_mode",
    "normalise_json_text",
    "response_format",
    "schema_instruction",
    "schema_name",
    "with_schema_in_prompt",
]
