"""Tools for tool-use tasks: plain typed Python functions turned into JSON-schema'd ``Tool``s.

``make_tool(fn)`` derives the argument schema from the signature (pydantic) and the description
from the docstring. ``Tool.call(args)`` validates arguments and never raises: bad arguments or
a failing tool become an observation text the model can read and recover from.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

import skillgrad.safeparse as safeparse
from skillgrad.skill.text import valid_data

OBSERVATION_LIMIT = 2000  # characters of a tool result shown to the model


@dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome: ``observation`` is what the model sees next."""

    observation: str
    ok: bool
    error: str = ""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    fn: Callable[..., Any]
    args_model: type[BaseModel]

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments (titles dropped: they only cost tokens)."""
        return _strip_titles(self.args_model.model_json_schema())

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def signature(self) -> str:
        """``name(arg: type, ...)``: how the tool is shown in the text protocol."""
        params = self.parameters.get("properties", {})
        args = ", ".join(f"{k}: {v.get('type', 'any')}" for k, v in params.items())
        return f"{self.name}({args})"

    async def call(self, arguments: Any) -> ToolResult:
        """Validate ``arguments`` (a dict or a JSON object string) and run the tool."""
        if isinstance(arguments, str):
            try:
                arguments = safeparse.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:  # also too deep or too long (JSONBoundError)
                return _bad(f"arguments for {self.name} are not valid JSON ({exc.msg}).", self)
        elif safeparse.too_deep(arguments):  # a backend's already-decoded arguments
            return _bad(f"arguments for {self.name} are {safeparse.too_deep(arguments)}.", self)
        if not isinstance(arguments, dict):
            return _bad(f"arguments for {self.name} must be a JSON object.", self)
        arguments = valid_data(arguments)  # outside text: what the tool receives is valid UTF-8
        try:
            validated = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            return _bad(f"invalid arguments for {self.name}: {_errors(exc)}.", self)
        try:
            value = self.fn(**{k: getattr(validated, k) for k in type(validated).model_fields})
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # a tool failure is an observation, not a crash
            text = f"tool {self.name} failed: {type(exc).__name__}: {exc}"
            return ToolResult(text, ok=False, error=text)
        return ToolResult(_truncate(_render(value)), ok=True)


def make_tool(fn: Callable[..., Any], name: str | None = None) -> Tool:
    """Turn a typed function into a Tool. Every parameter needs a type annotation."""
    tool_name = name or fn.__name__
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {tool_name!r}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise TypeError(
                f"tool {tool_name!r}: parameter {param.name!r} has no type annotation; "
                "annotate it so its JSON schema can be derived"
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    doc = inspect.getdoc(fn) or ""
    description = doc.split("\n\n")[0].replace("\n", " ").strip() or tool_name
    return Tool(tool_name, description, fn, model)


def _bad(message: str, tool: Tool) -> ToolResult:
    text = f"error: {message} Expected {tool.signature()}."
    return ToolResult(text, ok=False, error=message)


def _errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _truncate(text: str) -> str:
    if len(text) <= OBSERVATION_LIMIT:
        return text
    return text[:OBSERVATION_LIMIT] + f"... [{len(text) - OBSERVATION_LIMIT} chars truncated]"


def _strip_titles(schema: Any, names: bool = False) -> Any:
    # ``names`` marks a "properties" mapping, whose keys are argument names (one may be "title").
    if isinstance(schema, dict):
        return {
            k: _strip_titles(v, k == "properties" and not names)
            for k, v in schema.items()
            if names or k != "title"
        }
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


__all__ = ["Tool", "ToolResult", "make_tool"]
