"""The ``openai`` provider honours the official SDK's environment variables (issue 11 §6):
$OPENAI_BASE_URL (it went to api.openai.com), $OPENAI_ORG_ID and $OPENAI_PROJECT_ID."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`
from tests.servers import serve

from skillgrad.models.registry import aclose_backend, build_raw_backend
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Message

REQ = ChatRequest(messages=(Message("user", "hello there"),))
KEY = "sk-env-test-0123456789"


async def test_openai_provider_goes_to_openai_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(api_key=KEY, reply=lambda body: "HI") as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_ORG_ID", "org-local")
        monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-local")
        backend = build_raw_backend(ModelSpec.parse("openai:gpt-4o-mini"))
        try:
            completion = await backend.complete(REQ)
        finally:
            await aclose_backend(backend)
    assert completion.text == "HI"
    [request] = server.requests
    assert request.headers["openai-organization"] == "org-local"
    assert request.headers["openai-project"] == "proj-local"


async def test_a_configured_base_url_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serve(api_key=KEY, reply=lambda body: "HI") as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
        spec = ModelSpec.parse({"provider": "openai", "model": "m", "base_url": server.base_url})
        backend = build_raw_backend(spec)
        try:
            assert (await backend.complete(REQ)).text == "HI"
        finally:
            await aclose_backend(backend)
