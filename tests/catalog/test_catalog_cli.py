"""The CLI on the catalog: ``models list`` / ``models pull`` and a config naming a catalog model.

A test-only entry reaches the CLI through the user catalog file; the hub is a real server on
127.0.0.1. Every failure must be one clear error line, exit status 2, no traceback and no file
left under a model's name; a run, an evaluation or a sweep naming a model that is not installed
stops before creating anything.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fake_hub import FakeHub
from fixtures_catalog import REPO, closed_port_endpoint, leftovers, write_user_catalog
from interruptible import SKILLGRAD
from skillgrad.cli.main import app
from skillgrad.config import load_config
from skillgrad.errors import AssetError, PermanentModelError
from skillgrad.models.catalog import Catalog, CatalogEntry, ModelStore
from skillgrad.models.llamacpp import model_file
from skillgrad.models.registry import check_models
from skillgrad.models.spec import ModelSpec

runner = CliRunner()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command in a fresh process (the test's environment: cache, config, hub)."""
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def test_pull_then_list_then_pull_again(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    first = _cli("models", "pull", entry.name)
    assert first.returncode == 0, first.stderr
    assert f"{entry.name}: pulled from Hugging Face" in first.stdout and "verified" in first.stdout
    listed = runner.invoke(app, ["models", "list"])
    assert listed.exit_code == 0
    row = next(line for line in listed.output.splitlines() if line.startswith(entry.name))
    assert row.split()[1:4] == ["300", "kB", "MIT"] and "verified" in row
    assert str(store.path(entry)) in row
    again = _cli("models", "pull", entry.name)
    assert again.returncode == 0 and "already here, verified" in again.stdout
    assert len([r for r in hub.requests if r["path"].startswith("/cdn/")]) == 1


def test_ctrl_c_keeps_the_partial_and_the_same_command_resumes(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    hub.pace_s = 0.5  # 19 pieces of 16 kB: ~9 s for the whole file, time to interrupt it
    proc = subprocess.Popen(
        [*SKILLGRAD, "models", "pull", entry.name],
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    partial = store.partial(entry, "hf")
    deadline = time.monotonic() + 60
    while not (partial.exists() and partial.stat().st_size > 50_000):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "the same command resumes" in err
    assert "Traceback" not in err and not store.path(entry).exists()
    kept = partial.stat().st_size
    hub.pace_s = 0.0
    again = _cli("models", "pull", entry.name)
    assert again.returncode == 0, again.stderr
    assert store.path(entry).read_bytes() == content and leftovers(store) == [entry.file]
    assert hub.requests[-1]["range"] == f"bytes={kept}-"


def test_hash_mismatch_exits_2_without_traceback_or_file(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content[::-1])
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 2
    assert "\nerror: could not pull tiny-test" in done.stderr
    assert "another SHA-256" in done.stderr and "Traceback" not in done.stderr
    assert leftovers(store) == []


@pytest.mark.parametrize("how", ["offline", "unreachable"])
def test_no_reachable_source_exits_2_and_says_why(
    how: str,
    hub: FakeHub,
    env: dict[str, Path],
    store: ModelStore,
    entry: CatalogEntry,
    content: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    if how == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.setenv("HF_ENDPOINT", closed_port_endpoint())
    result = runner.invoke(app, ["models", "pull", entry.name])
    assert result.exit_code == 2
    why = "skipped, HF_HUB_OFFLINE is set" if how == "offline" else "Hugging Face is unreachable"
    assert why in result.output and "could not pull tiny-test" in result.output
    assert hub.requests == [] and leftovers(store) == []


def test_unknown_name_exits_2_before_any_download(hub: FakeHub, entry: CatalogEntry) -> None:
    result = runner.invoke(app, ["models", "pull", "qwen2.5-coder-0.5b", "no-such-model"])
    assert result.exit_code == 2 and "'no-such-model' is not in the local model catalog" in (
        result.output
    )
    assert hub.requests == []


def test_unwritable_cache_exits_2(
    hub: FakeHub,
    env: dict[str, Path],
    entry: CatalogEntry,
    content: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")  # the cache root is a file: nothing can be created under it
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "cannot write to the models cache" in done.stderr
    assert "set XDG_CACHE_HOME to a writable folder" in done.stderr
    assert hub.requests == []


def test_read_only_cache_exits_2(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    """A models folder the user cannot write: for root, whom permissions do not stop, the folder
    is made read-only by a bubblewrap bind mount around the real command."""
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    store.root.mkdir(parents=True)
    store.root.chmod(0o555)
    bwrap = shutil.which("bwrap")
    assert bwrap is not None or os.geteuid() != 0, "as root this test needs Debian's bubblewrap"
    wrap = [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(store.root), str(store.root)]
    cmd = [sys.executable, "-m", "skillgrad", "models", "pull", entry.name]
    try:
        done = subprocess.run(
            [*wrap, *cmd] if os.geteuid() == 0 else cmd,
            capture_output=True, text=True, timeout=120, env=dict(os.environ),
        )  # fmt: skip
    finally:
        store.root.chmod(0o755)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "cannot write to the models cache" in done.stderr
    assert not any(store.root.iterdir())  # nothing half-written left


def _config(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "local.yaml"
    path.write_text(
        f"models:\n  optimizer: {{provider: llamacpp, model: {model}}}\n"
        f"  target: {{provider: llamacpp, model: {model}}}\n"
        f"env: {{task: toy, output_root: {tmp_path / 'runs'}}}\n"
    )
    return path


def test_train_eval_and_sweep_name_the_pull_command_for_a_missing_model(
    env: dict[str, Path], entry: CatalogEntry, tmp_path: Path
) -> None:
    write_user_catalog(env["config"], entry)
    cfg = _config(tmp_path, entry.name)
    skill = tmp_path / "skill.md"
    skill.write_text("# Skill\n")
    for args in (
        ["train", str(cfg)],
        ["eval", str(cfg), "--skill", str(skill), "--split", "val"],
        ["sweep", str(cfg), "--seeds", "2", "--out", str(tmp_path / "sweep")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "local model tiny-test is not installed. Run: skillgrad models pull tiny-test" in (
            result.output
        ), args
    assert not (tmp_path / "runs").exists() and not (tmp_path / "sweep").exists()


def test_config_resolves_a_catalog_name_and_model_path_stays_any_file(
    env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes, tmp_path: Path
) -> None:
    write_user_catalog(env["config"], entry)
    store.root.mkdir(parents=True)
    store.path(entry).write_bytes(content)
    cfg = load_config(_config(tmp_path, entry.name))
    assert cfg.models.target.model == entry.name
    check_models([cfg.models.optimizer, cfg.models.target])  # installed: no error
    assert model_file(cfg.models.target) == store.path(entry)
    assert model_file(cfg.models.target, Catalog([entry], store)) == store.path(entry)
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"any GGUF, not in the catalog")
    assert model_file(ModelSpec(model="whatever", model_path=str(own))) == own
    with pytest.raises(PermanentModelError, match=r"model_path .* is not a file"):
        model_file(ModelSpec(model_path=str(tmp_path / "absent.gguf")))
    with pytest.raises(AssetError, match="is not in the local model catalog"):
        check_models([ModelSpec(model="qwen-typo")])
