"""A run records its calls (MeteredBackend -> CallCache); ReplayBackend answers only from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillgrad.errors import ReplayMissError
from skillgrad.models.context import call_context
from skillgrad.models.wrappers.metering import MeteredBackend
from skillgrad.models.wrappers.replay import ReplayBackend
from skillgrad.runs.cache import CallCache
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Message


def req(text: str, temperature: float = 0.0) -> ChatRequest:
    return ChatRequest(messages=(Message("user", text),), temperature=temperature)


async def test_record_then_replay_offline(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    live = FunctionBackend(lambda r: r.messages[-1].content.upper(), name="openai:gpt-4o-mini")
    recorder = MeteredBackend(live, CallCache(path), role="target")
    with call_context(stage="rollout", step=2):
        first = await recorder.complete(req("apple"))
        await recorder.complete(req("river"))
    assert first.text == "APPLE" and recorder.fresh_calls == 2
    assert recorder.cache.totals()["target"]["calls"] == 2
    recorder.cache.close()

    replay = ReplayBackend(path, "openai:gpt-4o-mini")  # a path opens the cache
    again = await replay.complete(req("apple"))
    assert again.text == "APPLE" and again.usage == first.usage and replay.hits == 1
    assert len(live.calls) == 2  # the live model was not called again


async def test_unrecorded_request_raises_replay_miss(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    await MeteredBackend(FunctionBackend(lambda r: "x", name="p:m"), cache, "target").complete(
        req("a")
    )
    replay = ReplayBackend(cache, "p:m")
    with pytest.raises(ReplayMissError, match=r"no recorded answer.*Request: .*unseen words"):
        await replay.complete(req("unseen words"))
    with pytest.raises(ReplayMissError):  # parameters are part of the key
        await replay.complete(req("a", temperature=0.7))
    with pytest.raises(ReplayMissError):  # and so is the backend name
        await ReplayBackend(cache, "p:other").complete(req("a"))


async def test_miss_message_shows_at_most_300_chars_of_the_request(tmp_path: Path) -> None:
    replay = ReplayBackend(CallCache(tmp_path / "c.sqlite"), "p:m")
    with pytest.raises(ReplayMissError) as info:
        await replay.complete(req("z" * 2000))
    shown = str(info.value).split("Request: ", 1)[1]
    assert len(shown) == 300


def test_missing_replay_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReplayMissError, match="does not exist"):
        ReplayBackend(tmp_path / "nope.sqlite", "p:m")
