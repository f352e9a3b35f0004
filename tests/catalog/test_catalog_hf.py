"""Pulling from a Hugging Face-compatible server on 127.0.0.1: download, resume, refusals."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fake_hub import FakeHub
from fixtures_catalog import REPO, Recorder, catalog, closed_port_endpoint, leftovers
from skillgrad.errors import AssetError
from skillgrad.models.catalog import CatalogEntry, ModelStore
from skillgrad.models.catalog.huggingface import ATTEMPTS


def test_pull_downloads_verifies_and_stamps(
    hub: FakeHub, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    hub.add(REPO, entry.file, content)
    cat = catalog(store, entry)
    assert cat.status(entry.name).path is None
    result = cat.pull(entry.name, Recorder())
    assert result.source == "huggingface" and result.path == store.path(entry)
    assert result.path.read_bytes() == content
    assert leftovers(store) == [entry.file]  # no partial left, nothing else
    assert hub.requests[0]["path"] == f"/{REPO}/resolve/main/{entry.file}"
    assert hub.requests[1]["path"].startswith("/cdn/")  # the hub's redirect was followed
    status = cat.status(entry.name)
    assert status.verified and status.where == "cache"
    again = cat.pull(entry.name, Recorder())  # a second pull is a no-op: no request
    assert again.source == "present" and len(hub.requests) == 2
    assert cat.require(entry.name) == result.path


def test_cut_transfer_is_resumed_with_a_range_request(
    hub: FakeHub, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    hub.add(REPO, entry.file, content)
    hub.cut_after = [100_000, 50_000]  # two responses end mid-body
    rec = Recorder()
    result = catalog(store, entry).pull(entry.name, rec)
    assert result.path.read_bytes() == content
    ranges = [r["range"] for r in hub.requests if r["path"].startswith("/cdn/")]
    assert ranges == [None, "bytes=100000-", "bytes=150000-"]
    assert sum(1 for _, n in rec.notes if "transfer cut" in n) == 2
    assert leftovers(store) == [entry.file]


def test_interrupted_pull_keeps_its_partial_and_the_next_pull_resumes(
    hub: FakeHub, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    hub.add(REPO, entry.file, content)
    hub.cut_after = [40_000] * ATTEMPTS  # every attempt of this pull is cut: it gives up
    cat = catalog(store, entry)
    with pytest.raises(AssetError, match=r"cut 4 times; 160,000 bytes are kept") as err:
        cat.pull(entry.name, Recorder())
    assert "resumes from there" in str(err.value)
    assert leftovers(store) == [f"{entry.file}.hf.partial"]  # never the final name
    with pytest.raises(AssetError, match="is not installed"):
        cat.require(entry.name)
    hub.requests.clear()
    rec = Recorder()
    assert cat.pull(entry.name, rec).path.read_bytes() == content
    assert [r["range"] for r in hub.requests if r["path"].startswith("/cdn/")] == ["bytes=160000-"]
    assert any("resuming at 160,000" in n for _, n in rec.notes)
    assert leftovers(store) == [entry.file]


def test_server_ignoring_range_restarts_from_zero(
    hub: FakeHub, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    hub.add(REPO, entry.file, content)
    hub.ignore_range = True
    hub.cut_after = [120_000]
    assert catalog(store, entry).pull(entry.name, Recorder()).path.read_bytes() == content


def test_hash_mismatch_is_refused_and_nothing_is_left(
    hub: FakeHub, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    hub.add(REPO, entry.file, bytes(reversed(content)))  # same size, other bytes
    with pytest.raises(AssetError, match="another SHA-256") as err:
        catalog(store, entry).pull(entry.name, Recorder())
    assert "refused and removed" in str(err.value) and "Hugging Face" in str(err.value)
    assert leftovers(store) == []


def test_resumed_partial_that_fails_is_fetched_again_from_the_start(
    hub: FakeHub, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    hub.add(REPO, entry.file, content)
    store.root.mkdir(parents=True)
    store.partial(entry, "hf").write_bytes(b"\0" * 1000)  # a damaged earlier partial
    rec = Recorder()
    assert catalog(store, entry).pull(entry.name, rec).path.read_bytes() == content
    assert any("did not verify; downloading it again" in n for _, n in rec.notes)


def test_a_file_of_another_size_is_refused_before_downloading(
    hub: FakeHub, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    hub.add(REPO, entry.file, content + b"more")
    with pytest.raises(AssetError, match=r"300,004 bytes, not the pinned 300,000"):
        catalog(store, entry).pull(entry.name, Recorder())
    assert leftovers(store) == []


def test_missing_file_on_the_hub(hub: FakeHub, store: ModelStore, entry: CatalogEntry) -> None:
    with pytest.raises(AssetError, match=r"HTTP 404, no such file \(check HF_ENDPOINT"):
        catalog(store, entry).pull(entry.name, Recorder())
    assert leftovers(store) == []


def test_unreachable_hub_fails_in_seconds(
    env: dict[str, Path], store: ModelStore, entry: CatalogEntry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", closed_port_endpoint())
    start = time.monotonic()
    with pytest.raises(AssetError, match=r"Hugging Face is unreachable at http://127\.0\.0\.1"):
        catalog(store, entry).pull(entry.name, Recorder())
    assert time.monotonic() - start < 5
    assert leftovers(store) == []


def test_hf_hub_offline_skips_the_hub(
    hub: FakeHub,
    store: ModelStore,
    entry: CatalogEntry,
    content: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub.add(REPO, entry.file, content)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(AssetError, match="Hugging Face: skipped, HF_HUB_OFFLINE is set"):
        catalog(store, entry).pull(entry.name, Recorder())
    assert hub.requests == [] and leftovers(store) == []
