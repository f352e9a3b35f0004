"""One structured optimizer call: prompt from ``prompts/*.md``, JSON validated against a schema.

A malformed output is re-asked once with the validation error; if it is still malformed the call
is recorded as failed (``OptimizerReply.error``) — never silently replaced by something else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from skillgrad.models.base import ModelBackend
from skillgrad.types import ChatRequest, Message

M = TypeVar("M", bound=BaseModel)


def render_prompt(name: str, **fields: Any) -> str:
    """Fill ``train/prompts/<name>.md`` (``$field`` placeholders)."""
    text = resources.files("skillgrad.train").joinpath("prompts", f"{name}.md").read_text("utf-8")
    return Template(text).substitute({k: str(v) for k, v in fields.items()})


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_json_output(text: str) -> Any:
    """Parse JSON from a model reply, tolerating code fences and prose around one object."""
    text = text.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start = text.find("{")
        end = text.rfind("}")
        if start == -1 or end <= start:
            raise
        return json.loads(text[start : end + 1])


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
class OptimizerReply:
    parsed: Any  # a validated pydantic model instance, or None when the call failed
    raw: tuple[str, ...]
    error: str | None = None
    reasked: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.error is None,
            "output": self.parsed.model_dump() if self.parsed is not None else None,
            "raw": list(self.raw),
            "error": self.error,
            "reasked": self.reasked,
        }


def _validate(schema: type[M], text: str) -> M:
    try:
        data = parse_json_output(text)
    except (json.JSONDecodeError, ValueError) as exc:
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
) -> OptimizerReply:
    """Ask, validate, re-ask once with the error; return a reply (``error`` set on failure)."""
    json_schema = request_schema(schema)
    messages: tuple[Message, ...] = (Message("system", system), Message("user", user))
    raws: list[str] = []
    for attempt in range(2):
        request = ChatRequest(
            messages=messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            response_schema=json_schema,
        )
        completion = await backend.complete(request)
        raws.append(completion.text)
        try:
            return OptimizerReply(
                _validate(schema, completion.text), tuple(raws), None, attempt > 0
            )
        except ValueError as exc:
            error = f"output failed validation: {exc}"[:1500]
            messages = (
                *messages,
                Message("assistant", completion.text),
                Message(
                    "user",
                    f"Your reply is invalid: {error}\nReply again with JSON only, matching this "
                    f"schema exactly:\n{json.dumps(json_schema)}",
                ),
            )
    return OptimizerReply(None, tuple(raws), error, True)


__all__ = ["OptimizerReply", "ask_structured", "parse_json_output", "render_prompt"]
