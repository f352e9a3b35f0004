"""extract_json, the validate-and-re-ask loop, the prompt templates and the structured-output
helpers (modes, rejection detection, schema in the prompt)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from skillgrad.models.structured import (
    StructuredReply,
    ask_structured,
    extract_json,
    is_mode_rejection,
    next_mode,
    normalise_json_text,
    response_format,
    schema_name,
    with_schema_in_prompt,
)
from skillgrad.prompts import render_prompt
from skillgrad.testing import ScriptedBackend
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
        ('```json\n{"a": 6}```', {"a": 6}),
        ('```js\n{"a": 7}\n```', {"a": 7}),
        ('```json {"a": 8} ```', {"a": 8}),
        ('```python\nx = {1: 2}\n```\n```json\n{"a": 9}\n```', {"a": 9}),
        ('Note {not json} then {"a": [1, 2]} end', {"a": [1, 2]}),
    ],
)
def test_extract_json_tolerates_fences_and_prose(text: str, expected: object) -> None:
    assert extract_json(text) == expected


def test_extract_json_raises_value_error_with_text_start() -> None:
    with pytest.raises(ValueError, match=r"no JSON object or array found.*I cannot help"):
        extract_json("I cannot help with that.")
    with pytest.raises(ValueError, match="output is empty"):
        extract_json("  \n")


class Memo(BaseModel):
    memo: str = Field(min_length=1, max_length=500)


async def test_a_valid_reply_is_parsed_with_the_capped_schema_sent() -> None:
    backend = ScriptedBackend().expect("Write", '```json\n{"memo": "ok"}\n```')
    reply = await ask_structured(backend, "sys", "Write a memo", Memo, max_tokens=50, seed=3)
    assert reply == StructuredReply(Memo(memo="ok"), ('```json\n{"memo": "ok"}\n```',))
    request = backend.calls[0]
    assert request.seed == 3 and request.temperature == 0.0
    assert request.response_schema is not None
    assert "minLength" not in json.dumps(request.response_schema)  # grammar-friendly


async def test_an_invalid_reply_is_reasked_once_with_the_error() -> None:
    backend = (
        ScriptedBackend()
        .expect("Write", '{"memo": ""}')
        .expect(lambda r: "Your reply is invalid" in r.messages[-1].content, '{"memo": "x"}')
    )
    reply = await ask_structured(backend, "sys", "Write a memo", Memo, max_tokens=50)
    assert reply.parsed == Memo(memo="x") and reply.reasked and reply.error is None
    again = backend.calls[1].messages
    assert [m.role for m in again] == ["system", "user", "assistant", "user"]
    assert "memo" in again[-1].content and "at least 1 character" in again[-1].content


async def test_a_reply_invalid_twice_is_recorded_as_failed_never_replaced() -> None:
    backend = ScriptedBackend().expect("Write", "no json").expect("verdict is invalid", "[]")
    reply = await ask_structured(
        backend, "sys", "Write a memo", Memo, max_tokens=50, reask="judge_reask"
    )
    assert reply.parsed is None and reply.raw == ("no json", "[]") and reply.reasked
    assert reply.error is not None and "valid dictionary or instance of Memo" in reply.error
    assert reply.to_json()["ok"] is False and reply.to_json()["output"] is None
    backend.assert_done()


KINDS = ("reflect", "deep_reflect", "merge", "rank", "slow_update", "meta_skill", "judge")


def test_every_call_kind_has_its_own_system_prompt() -> None:
    systems = {kind: render_prompt(f"{kind}_system") for kind in KINDS}
    assert len(set(systems.values())) == len(KINDS)
    assert all("JSON only" in text for text in systems.values())


def test_a_missing_template_field_is_named() -> None:
    with pytest.raises(KeyError, match="rubric"):
        render_prompt("judge_user", task="t", reference="", answer="a")


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
