"""Structured (JSON) output: the one JSON extractor, the one validate-and-re-ask loop, and the
server modes.

``extract_json`` is the only function that pulls JSON out of model text (optimizer replies, the
LLM judge, scorers of JSON outputs, backends normalising text-mode replies). ``ask_structured`` is
the only loop that asks for a pydantic-validated reply: invalid replies are re-asked once with the
validation error, and a reply still invalid is returned as failed (``StructuredReply.error``),
never silently replaced. Every optimizer call and the judge use it.

Server modes, tried in order until one is accepted by the server: ``json_schema`` (native
constrained output), ``json_object`` (JSON mode, schema also in the prompt), ``text`` (schema in
the prompt only, JSON extracted tolerantly). Backends remember the mode that works per endpoint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

import skillgrad.safeparse as safeparse
from skillgrad.models.base import ModelBackend
from skillgrad.prompts import render_prompt
from skillgrad.skill.text import valid_data, valid_text
from skillgrad.types import ChatRequest, Message

M = TypeVar("M", bound=BaseModel)

StructuredMode = Literal["json_schema", "json_object", "text"]
MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "text")

# Words a server's error uses when it does not understand the structured-output request
# (OpenAI-style 400s, vLLM/SGLang 400s, llama.cpp server's 500 "response_format type must be ...").
_REJECTION_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar")

# A fenced block: its language tag (may be empty) and its body.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n?(.*?)```", re.DOTALL)
_JSON_FENCES = ("", "json", "javascript", "js")
# Bracket positions tried as the start of a JSON value after prose: each try scans ahead, so
# a reply made of brackets would otherwise cost quadratic time.
_MAX_STARTS = 1000


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
    return render_prompt(
        "schema_instruction", schema=json.dumps(schema, ensure_ascii=False, sort_keys=True)
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


def extract_json(text: str) -> Any:
    """The JSON value in model text: the whole text, else the first fenced block (untagged or
    ``json``/``js``) that parses, else the first decodable ``{...}``/``[...]`` after prose.

    Raises ``ValueError`` saying why (empty output, a value nested deeper or a text longer than
    ``safeparse`` accepts, or no JSON object or array, with the start of the text). Callers that
    normalise text first (scorers: NFKC) do so before calling this. Its strings are valid UTF-8
    (``skill.text.valid_data``): a JSON escape such as ``"\\udce9"`` decodes to a lone surrogate.
    """
    return valid_data(_find_json(text))


def _find_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped:
        raise ValueError("output is empty")
    if len(stripped) > safeparse.MAX_CHARS:
        raise ValueError(
            f"output is {len(stripped)} characters; at most {safeparse.MAX_CHARS} are read"
        )
    fenced = [b for tag, b in _FENCE.findall(stripped) if tag.lower() in _JSON_FENCES]
    bound: safeparse.JSONBoundError | None = None
    for candidate in (stripped, *fenced):
        try:
            return safeparse.loads(candidate.strip())
        except safeparse.JSONBoundError as exc:
            bound = bound or exc
        except json.JSONDecodeError:
            continue
    for n, match in enumerate(re.finditer(r"[\[{]", stripped)):
        if n >= _MAX_STARTS:
            break
        try:
            return safeparse.raw_decode(stripped, match.start())[0]
        except safeparse.JSONBoundError as exc:
            bound = bound or exc
        except json.JSONDecodeError:
            continue
    if bound is not None:
        raise ValueError(f"the JSON in the output is refused: {bound.msg} (character {bound.pos})")
    raise ValueError(f"no JSON object or array found in model output: {stripped[:200]!r}")


def normalise_json_text(text: str) -> str:
    """The extracted JSON re-serialised, or ``text`` (made valid UTF-8) when none can be found
    (the caller validates and re-asks with the error)."""
    try:
        return json.dumps(extract_json(text), ensure_ascii=False)
    except ValueError:
        return valid_text(text)


GRAMMAR_MAX_LENGTH = 160


def request_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the model. String limits are capped at ``GRAMMAR_MAX_LENGTH``:
    grammar-constrained decoders expand a long ``maxLength`` into a huge grammar, and a small
    model without any cap can loop inside one string until ``max_tokens`` cuts the JSON. The
    full schema is still enforced on the reply."""

    def cap(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: cap(v) for k, v in node.items() if k != "minLength"}
            if "maxLength" in out:
                out["maxLength"] = min(int(out["maxLength"]), GRAMMAR_MAX_LENGTH)
            return out
        if isinstance(node, list):
            return [cap(v) for v in node]
        return node

    capped: dict[str, Any] = cap(schema.model_json_schema())
    return capped


@dataclass(frozen=True)
class StructuredReply(Generic[M]):
    """The outcome of ``ask_structured``: the validated reply, or ``error`` (never both)."""

    parsed: M | None
    """The validated pydantic model, or None when the call failed."""
    raw: tuple[str, ...]
    """Every reply text received, in order (two when re-asked)."""
    error: str | None = None
    """Why the last reply failed validation; None on success."""
    reasked: bool = False
    """Whether the first reply was invalid and the model was asked again."""

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.error is None,
            "output": self.parsed.model_dump() if self.parsed is not None else None,
            "raw": list(self.raw),
            "error": self.error,
            "reasked": self.reasked,
        }


def validate_reply(schema: type[M], text: str) -> M:
    """``text`` parsed (``extract_json``) and validated; ValueError says what is wrong."""
    try:
        data = extract_json(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from exc
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ValueError(str(exc)) from exc


async def ask_structured(
    backend: ModelBackend,
    system: str,
    user: str,
    schema: type[M],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    reask: str = "reask",
    check: Callable[[M], str | None] | None = None,
    check_temperature: float | None = None,
) -> StructuredReply[M]:
    """Ask for a reply matching ``schema``; re-ask once (prompt template ``reask``, with the
    validation error and the schema); return the reply, ``error`` set when still invalid.

    ``check`` looks at a valid reply and may return why it is not useful (e.g. it repeats what
    the caller already has): that also earns the one re-ask, with the reason shown, at
    ``check_temperature`` when given (a model at temperature 0 tends to say the same again), but
    a valid reply is never discarded for it: the last valid reply is returned."""
    json_schema = request_schema(schema)
    messages: tuple[Message, ...] = (Message("system", system), Message("user", user))
    raws: list[str] = []
    error = ""
    fallback: M | None = None
    for attempt in range(2):
        sample = check_temperature if fallback is not None else None
        request = ChatRequest(
            messages=messages,
            temperature=temperature if sample is None else sample,
            max_tokens=max_tokens,
            seed=seed if sample is None else seed + 1,
            response_schema=json_schema,
        )
        completion = await backend.complete(request)
        raws.append(completion.text)
        try:
            parsed = validate_reply(schema, completion.text)
        except ValueError as exc:
            error = f"output failed validation: {exc}"[:1500]
            again = render_prompt(reask, error=error, schema=json.dumps(json_schema))
            messages = (*messages, Message("assistant", completion.text), Message("user", again))
            continue
        problem = check(parsed) if check is not None and attempt == 0 else None
        if problem:
            messages = (*messages, Message("assistant", completion.text), Message("user", problem))
            fallback = parsed
            continue
        return StructuredReply(parsed, tuple(raws), None, attempt > 0)
    if fallback is not None:  # the re-ask after a check gave nothing valid: keep the first
        return StructuredReply(fallback, tuple(raws), None, True)
    return StructuredReply(None, tuple(raws), error, True)


__all__ = [
    "GRAMMAR_MAX_LENGTH",
    "MODES",
    "StructuredMode",
    "StructuredReply",
    "ask_structured",
    "extract_json",
    "is_mode_rejection",
    "next_mode",
    "normalise_json_text",
    "request_schema",
    "response_format",
    "schema_instruction",
    "schema_name",
    "validate_reply",
    "with_schema_in_prompt",
]
