"""build_backend / parse_model_arg: provider dispatch, wrapping, and actionable setup errors."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from skillgrad.errors import PermanentModelError
from skillgrad.models.openai import OpenAIChatBackend, is_reasoning_model
from skillgrad.models.registry import build_backend, build_raw_backend, parse_model_arg
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.ratelimit import LimitedBackend, LimiterRegistry
from skillgrad.models.wrappers.retry import RetryBackend
from skillgrad.types import ChatRequest, Message


def test_parse_model_arg() -> None:
    spec = parse_model_arg("openai:gpt-4o-mini")
    assert (spec.provider, spec.model) == ("openai", "gpt-4o-mini")
    assert parse_model_arg({"provider": "anthropic", "model": "claude-haiku-4-5"}).name == (
        "anthropic:claude-haiku-4-5"
    )
    with pytest.raises(
        PermanentModelError, match=r"Did you mean .openai.. Known providers: anthropic, azure"
    ):
        parse_model_arg("openia:gpt-4o")


def test_unknown_provider_lists_known_ones() -> None:
    with pytest.raises(PermanentModelError, match=r"unknown model provider 'bogus'.*azure"):
        build_backend(ModelSpec(provider="bogus", model="x"), LimiterRegistry())


def test_build_backend_wraps_retry_around_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = ModelSpec(provider="openai", model="gpt-4o-mini", max_retries=2, timeout_s=9)
    registry = LimiterRegistry()
    backend = build_backend(spec, registry, rng_seed=3)
    assert isinstance(backend, RetryBackend) and isinstance(backend.inner, LimitedBackend)
    assert isinstance(backend.inner.inner, OpenAIChatBackend)
    assert backend.name == "openai:gpt-4o-mini"
    assert (backend.max_retries, backend.timeout_s) == (2, 9)
    other = build_backend(spec.model_copy(update={"model": "gpt-4o"}), registry)
    assert isinstance(other, RetryBackend) and isinstance(other.inner, LimitedBackend)
    assert other.inner.limiter is backend.inner.limiter  # one endpoint, one limiter


def test_missing_openai_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(PermanentModelError, match=r"OPENAI_API_KEY is not set.*export"):
        build_raw_backend(ModelSpec(provider="openai", model="gpt-4o-mini"))
    monkeypatch.delenv("MY_KEY", raising=False)
    spec = ModelSpec(provider="openai", model="gpt-4o-mini", api_key_env="MY_KEY")
    with pytest.raises(PermanentModelError, match="MY_KEY is not set"):
        build_raw_backend(spec)


def test_missing_anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(PermanentModelError, match="ANTHROPIC_API_KEY is not set"):
        build_raw_backend(ModelSpec(provider="anthropic", model="claude-haiku-4-5"))


def test_missing_anthropic_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if the extra were not installed
    with pytest.raises(PermanentModelError, match=r"pip install 'skillgrad\[anthropic\]'"):
        build_raw_backend(ModelSpec(provider="anthropic", model="claude-haiku-4-5"))


def test_azure_without_key_or_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "azure.identity.aio", None)
    spec = ModelSpec(provider="azure", model="gpt-4o", azure_endpoint="https://r.example")
    with pytest.raises(
        PermanentModelError, match=r"AZURE_OPENAI_API_KEY.*pip install 'skillgrad\[azure\]'"
    ):
        build_raw_backend(spec)


def test_azure_without_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    with pytest.raises(PermanentModelError, match="azure_endpoint"):
        build_raw_backend(ModelSpec(provider="azure", model="gpt-4o"))


def test_compatible_needs_base_url_but_no_key() -> None:
    with pytest.raises(PermanentModelError, match=r"needs base_url.*/v1"):
        build_raw_backend(ModelSpec(provider="openai_compatible", model="qwen"))
    spec = ModelSpec(provider="openai_compatible", model="qwen", base_url="http://127.0.0.1:1/v1")
    assert build_raw_backend(spec).name == "openai_compatible:qwen"


def test_bad_structured_mode_option() -> None:
    spec = ModelSpec(
        provider="openai_compatible",
        model="m",
        base_url="http://127.0.0.1:1/v1",
        options={"structured_mode": "xml"},
    )
    with pytest.raises(PermanentModelError, match="structured_mode='xml'"):
        build_raw_backend(spec)


def test_llamacpp_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    importlib.import_module("skillgrad.models.kv_sequences")  # as after an earlier in-process run
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if the extra is not installed
    with pytest.raises(PermanentModelError, match=r"pip install 'skillgrad\[local\]'"):
        build_backend(ModelSpec(provider="llamacpp"), LimiterRegistry())


async def test_function_provider_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "mymodel.py").write_text(
        "def answer(request):\n    return 'echo ' + request.messages[-1].content\n"
    )
    spec = ModelSpec(provider="function", model=f"{tmp_path / 'mymodel.py'}:answer")
    backend = build_backend(spec, LimiterRegistry())
    out = await backend.complete(ChatRequest(messages=(Message("user", "hi"),)))
    assert out.text == "echo hi" and backend.name == spec.name
    bad = ModelSpec(provider="function", model=f"{tmp_path / 'mymodel.py'}:nope")
    with pytest.raises(PermanentModelError, match="no attribute 'nope'"):
        build_backend(bad, LimiterRegistry())


@pytest.mark.parametrize(
    "model, effort, expected",
    [
        ("o3-mini", None, True),
        ("gpt-5-mini", None, True),
        ("openai/o4-mini", None, True),
        ("gpt-4o-mini", None, False),
        ("qwen2.5", "low", True),
    ],
)
def test_reasoning_model_detection(model: str, effort: str | None, expected: bool) -> None:
    assert is_reasoning_model(model, effort) is expected
