"""extract_json and the structured-output helpers (modes, rejection detection, prompt)."""

from __future__ import annotations

import json

import pytest

from skillgrad.models.structured import (
    extract_json,
    is_mode_rejection,
    next_mode,
    normalise_json_text,
    response_format,
    schema_name,
    with_schema_in_prompt,
)
from skillgrad.types import ChatRequest, Message

SCHEMA = {"title": "Edit list!", "type": "object", "properties": {"a": {"type": "integer"}}}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('```json\n{"a": 2}\n```', {"a": 2}),
        ('Here you go:\n```\n{"a": 3}\n```\nThanks', {"a": 3}),
        ('Sure! The answer is {"a": {"b": [4]}} as requested.', {"a": {"b": [4]}}),
        ('prose with {braces} first, then {"a": 5}', {"a": 5}),
        ('"just a string"', "just a string"),
    ],
)
def test_extract_json_tolerates_fences_and_prose(text: str, expected: object) -> None:
    assert extract_json(text) == expected


def test_extract_json_raises_value_error_with_text_start() -> None:
    with pytest.raises(ValueError, match=r"no JSON value found.*I cannot help"):
        extract_json("I cannot help with that.")


def test_normalise_json_text_keeps_unparseable_text() -> None:
    assert json.loads(normalise_json_text('ok: {"a": 1}')) == {"a": 1}
    assert normalise_json_text("no json here") == "no json here"


def test_modes_fall_back_in_order() -> None:
    assert next_mode("json_schema") == "json_object"
    assert next_mode("json_object") == "text"
    assert next_mode("text") is None


def test_response_format_shapes() -> None:
    rf = response_format("json_schema", SCHEMA)
    assert rf == {
        "type": "json_schema",
        "json_schema": {"name": "Edit_list_", "schema": SCHEMA, "strict": False},
    }
    assert response_format("json_object", SCHEMA) == {"type": "json_object", "schema": SCHEMA}
    assert response_format("text", SCHEMA) is None
    assert schema_name({}) == "response"


@pytest.mark.parametrize(
    "status, message, expected",
    [
        (500, 'response_format type must be one of "text" or "json_object"', True),
        (400, "Invalid schema for response_format 'x'", True),
        (400, "json_schema is not supported by this model", True),
        (500, "CUDA out of memory", False),
        (429, "response_format rate limited", False),
        (401, "bad key for json_schema", False),
        (404, "model not found", False),
        (None, "response_format", False),
    ],
)
def test_is_mode_rejection(status: int | None, message: str, expected: bool) -> None:
    assert is_mode_rejection(status, message) is expected


def test_schema_goes_into_existing_or_new_system_prompt() -> None:
    with_system = ChatRequest(
        messages=(Message("system", "Be brief."), Message("user", "hi")), response_schema=SCHEMA
    )
    out = with_schema_in_prompt(with_system)
    assert out.messages[0].content.startswith("Be brief.\n\nRespond with only a JSON")
    assert json.dumps(SCHEMA, sort_keys=True) in out.messages[0].content
    assert with_system.messages[0].content == "Be brief."  # request not mutated
    bare = ChatRequest(messages=(Message("user", "hi"),), response_schema=SCHEMA)
    out2 = with_schema_in_prompt(bare)
    assert [m.role for m in out2.messages] == ["system", "user"]
