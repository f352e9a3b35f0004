"""Providers are registered like tasks and scorers; litellm talks to a real local server."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`
from tests.servers import serve
from tests.servers.fake_llm import Fault

from skillgrad.errors import PermanentModelError, TransientModelError
from skillgrad.models.function import FunctionBackend
from skillgrad.models.registry import aclose_backend, build_backend, get_provider, provider_names
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.ratelimit import LimiterRegistry
from skillgrad.models.wrappers.retry import RetryBackend
from skillgrad.types import ChatRequest, Message

REQ = ChatRequest(messages=(Message("system", "Be terse."), Message("user", "hello there")))
BUILTINS = {"llamacpp", "openai", "azure", "openai_compatible", "anthropic", "function", "litellm"}


def test_builtins_are_entry_points_declaring_their_abilities() -> None:
    assert set(provider_names()) >= BUILTINS
    assert get_provider("openai").remote and get_provider("litellm").remote
    assert not get_provider("llamacpp").remote and not get_provider("function").remote
    assert "azure_endpoint" in get_provider("azure").options
    assert get_provider("litellm").extra == "litellm"


def test_factory_source_has_no_provider_names_and_no_upward_imports() -> None:
    src = (Path(__file__).resolve().parents[2] / "src/skillgrad/models/registry.py").read_text()
    assert "skillgrad.registry" not in src and "skillgrad.testing" not in src
    for name in BUILTINS:
        assert f'"{name}"' not in src


def test_in_process_provider_is_not_wrapped_remote_is(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def reply(request):\n    return 'ok'\n")
    spec = ModelSpec(provider="function", model=f"{tmp_path / 'm.py'}:reply")
    assert isinstance(build_backend(spec, LimiterRegistry()), FunctionBackend)
    remote = ModelSpec(provider="openai_compatible", model="m", base_url="http://127.0.0.1:9/v1")
    assert isinstance(build_backend(remote, LimiterRegistry()), RetryBackend)


async def test_a_third_party_provider_is_one_file_plus_one_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "echo_provider.py").write_text(
        "from skillgrad.models.function import FunctionBackend\n"
        "from skillgrad.models.registry import Provider\n"
        "def build(spec):\n"
        "    return FunctionBackend(lambda r: 'echo:' + spec.model, name=spec.name)\n"
        "PROVIDER = Provider(name='echo', build=build, remote=False)\n"
    )
    dist = tmp_path / "echo_provider-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-provider\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[skillgrad.providers]\necho = echo_provider:PROVIDER\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "echo" in provider_names()
    backend = build_backend(ModelSpec.parse("echo:abc"), LimiterRegistry())
    assert (await backend.complete(REQ)).text == "echo:abc"


def test_unknown_provider_says_did_you_mean_and_how_to_register() -> None:
    with pytest.raises(PermanentModelError, match=r"Did you mean 'anthropic'.*entry-point group"):
        get_provider("antropic")


@pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="litellm extra")
async def test_litellm_against_a_real_local_openai_compatible_server() -> None:
    with serve() as server:
        spec = ModelSpec(provider="litellm", model="openai/qwen-test", base_url=server.base_url)
        backend = build_backend(spec, LimiterRegistry())
        try:
            out = await backend.complete(REQ)
        finally:
            await aclose_backend(backend)
        assert out.text == "hello there"
        assert out.usage.completion_tokens > 0
        body = server.requests[0].body
        assert body["model"] == "qwen-test"
        assert body["messages"][0] == {"role": "system", "content": "Be terse."}


@pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="litellm extra")
async def test_litellm_errors_map_to_transient_and_permanent() -> None:
    with serve() as server:
        spec = ModelSpec(
            provider="litellm", model="openai/qwen-test", base_url=server.base_url, max_retries=0
        )
        backend = build_backend(spec, LimiterRegistry())
        server.add_faults(Fault(status=503))
        with pytest.raises(TransientModelError):
            await backend.complete(REQ)
        server.add_faults(Fault(status=401))
        with pytest.raises(PermanentModelError, match="401"):
            await backend.complete(REQ)


def test_missing_litellm_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # as if not installed
    with pytest.raises(PermanentModelError, match=r"pip install 'skillgrad\[litellm\]'"):
        get_provider("litellm").build(ModelSpec(provider="litellm", model="gemini/x"))
