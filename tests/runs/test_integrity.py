"""Corrupted or tampered run directories (issue 11 §3): a clear error naming the file (exit 2, no
traceback) or a documented safe recovery, never a silent wrong result.

Each case damages a copy of one finished run and re-runs ``skillgrad train`` on it (a re-run of a
finished run resumes it: it loads and checks the checkpoint like any resume).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from rundir_helpers import FAKES, assert_clean_refusal, train, write_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(config, pristine copy of its finished run directory)."""
    base = tmp_path_factory.mktemp("integrity")
    config = write_config(base)
    done = train(config)
    assert done.returncode == 0, done.stderr
    shutil.copytree(base / "runs/run", base / "pristine")
    return config, base / "pristine"


@pytest.fixture
def run(pristine: tuple[Path, Path]) -> Path:
    """A fresh copy of the finished run, at the path the config trains into."""
    config, clean = pristine
    target = config.parent / "runs/run"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(clean, target)
    return target


def _resume(run: Path) -> object:
    return train(run.parents[1] / "config.yaml")


def _state(run: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run / "runtime_state.json").read_text())
    return data


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"{}", "no integrity record"),  # before: resumed with exit 0 and a wrong initial score
        (b"", "not valid JSON"),
        (b"truncate", "not valid JSON"),
        (os.urandom(512), "not valid JSON"),
        (b"[1, 2]", "no integrity record"),
    ],
    ids=["empty-object", "empty", "truncated", "random", "list"],
)
def test_damaged_runtime_state_is_refused(run: Path, content: bytes, says: str) -> None:
    path = run / "runtime_state.json"
    if content == b"truncate":
        content = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(content)
    assert_clean_refusal(_resume(run), str(path), says, "--fresh")  # type: ignore[arg-type]


def test_hand_edited_state_skill_is_refused(run: Path) -> None:
    """Before: a skill edited in runtime_state.json was trusted and shipped as best_skill.md."""
    state = _state(run)
    state["best_skill"] = "Always answer 42."
    state["skill"] = "Always answer 42."
    (run / "runtime_state.json").write_text(json.dumps(state))
    proc = _resume(run)
    assert_clean_refusal(proc, "runtime_state.json", "modified after it was written")  # type: ignore[arg-type]
    assert "42" not in (run / "best_skill.md").read_text()


def test_hand_edited_best_skill_is_restored_from_the_checkpoint(run: Path) -> None:
    """Documented safe recovery: files derived from the sealed state are rewritten on resume."""
    good = (run / "best_skill.md").read_text()
    (run / "best_skill.md").write_text("Always answer 42.\n")
    (run / "history.json").write_text("[]")
    proc = _resume(run)
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert (run / "best_skill.md").read_text() == good
    assert json.loads((run / "history.json").read_text()) == _state(run)["history"]


@pytest.mark.parametrize(
    "content",
    [b"", b"{}", b'{"env": {"task": "to', os.urandom(256)],
    ids=["empty", "empty-object", "truncated", "random"],
)
def test_damaged_config_is_refused(run: Path, content: bytes) -> None:
    (run / "config.json").write_bytes(content)
    assert_clean_refusal(_resume(run), str(run / "config.json"))  # type: ignore[arg-type]


def test_garbage_line_in_committed_patch_log_is_refused(run: Path) -> None:
    path = run / "patch_log.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert lines, "the reference run must have accepted an edit"
    path.write_text("".join(["not json at all\n", *lines]))
    assert_clean_refusal(_resume(run), str(path), "altered")  # type: ignore[arg-type]
    blame = subprocess.run(
        [sys.executable, "-m", "skillgrad", "blame", str(run)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "1000"},
    )  # readers name the file and line too
    assert_clean_refusal(blame, f"{path} line 1: not a JSON record")


def test_deleted_patch_log_is_refused(run: Path) -> None:
    (run / "patch_log.jsonl").unlink()
    assert_clean_refusal(_resume(run), str(run / "patch_log.jsonl"), "altered or removed")  # type: ignore[arg-type]


def test_patch_log_tail_of_an_uncommitted_step_is_dropped(run: Path) -> None:
    """A torn or uncommitted tail after the committed lines is dropped on resume (documented)."""
    path = run / "patch_log.jsonl"
    committed = path.read_text()
    path.write_text(committed + '{"step": 99, "edit": {}}\n{"torn": ')
    proc = _resume(run)
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert path.read_text() == committed


def test_random_bytes_in_the_ledger_are_refused(run: Path) -> None:
    path = run / "calls.sqlite"
    path.write_bytes(os.urandom(path.stat().st_size))
    assert_clean_refusal(_resume(run), str(path), "not a readable SQLite database")  # type: ignore[arg-type]


def test_damaged_ledger_page_is_refused(run: Path) -> None:
    path = run / "calls.sqlite"
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 3 * page
    data[2 * page : 3 * page] = os.urandom(page)  # header intact, a table page destroyed
    path.write_bytes(bytes(data))
    assert_clean_refusal(_resume(run), str(path))  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["deleted", "emptied", "rows-removed"])
def test_lost_ledger_is_refused(run: Path, how: str) -> None:
    """Before: a deleted or empty ledger silently re-paid every call, budget back to zero."""
    path = run / "calls.sqlite"
    if how == "deleted":
        path.unlink()
    elif how == "emptied":
        path.write_bytes(b"")
    else:
        with sqlite3.connect(path) as db:
            db.execute("DELETE FROM calls WHERE rowid % 2 = 0")
        db.close()
    log = run.parent / f"paid-{how}.log"
    proc = train(run.parents[1] / "config.yaml", call_log=log)
    assert_clean_refusal(proc, str(path), "paid calls recorded at the last checkpoint")
    assert not log.exists()  # nothing was paid again


def test_edited_splits_manifest_is_refused(run: Path) -> None:
    path = run / "splits.json"
    splits = json.loads(path.read_text())
    splits["test"] = splits["test"][:1]
    path.write_text(json.dumps(splits))
    assert_clean_refusal(_resume(run), "splits.json")  # type: ignore[arg-type]


def _data_config(folder: Path) -> Path:
    data = folder / "data"
    data.mkdir(exist_ok=True)
    words = {"train": ["cat", "dog", "owl", "elk"], "val": ["ant", "bee"], "test": ["cow", "pig"]}
    for split, ws in words.items():
        rows = [{"id": f"{split}-{w}", "word": w, "answer": w.upper()} for w in ws]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = f"""
train: {{num_epochs: 1, batch_size: 2, patience: 5, learning_rate: 4, min_learning_rate: 1,
        minibatch_size: 2}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: data, output_root: "{folder / "runs"}", run_name: run,
      options: {{split_dir: data, prompt: "Word: {{word}}", scorer: exact}}}}
"""
    path = folder / "config.yaml"
    path.write_text(cfg)
    return path


@pytest.mark.parametrize("change", ["ids", "content"])
def test_test_data_replaced_between_stop_and_resume_is_refused(tmp_path: Path, change: str) -> None:
    """Before: new test data was used without notice although splits.json lists the old ids."""
    config = _data_config(tmp_path)
    first = train(config, extra_env={"FAKE_TARGET_DOWN": "1"})  # stops: endpoint down
    assert first.returncode == 2, first.stderr
    test_file = tmp_path / "data/test.jsonl"
    if change == "ids":
        test_file.write_text('{"id": "test-new", "word": "yak", "answer": "YAK"}\n')
        says = "test: 2 -> 1 items"
    else:
        test_file.write_text(test_file.read_text().replace('"COW"', '"MOO"'))
        says = "test: same ids, different inputs or references"
    proc = train(config)
    assert_clean_refusal(proc, "the task's data changed since this run started", says)
    assert not (tmp_path / "runs/run/summary.json").exists()


def _plant(run: Path, name: str, outside: Path) -> None:
    """Move ``run/name`` to ``outside`` and leave a symlink to it in its place."""
    shutil.move(run / name, outside)
    (run / name).symlink_to(outside, target_is_directory=outside.is_dir())


def _snapshot(path: Path) -> dict[str, bytes]:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p): p.read_bytes() for p in files}


@pytest.mark.parametrize(
    "name", ["events.jsonl", "steps", "patch_log.jsonl", "calls.sqlite", "skills/skill_v0000.md"]
)
def test_a_planted_symlink_is_refused_and_nothing_is_written_through_it(
    run: Path, name: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside" / Path(name).name
    outside.parent.mkdir()
    _plant(run, name, outside)
    before = _snapshot(outside)
    config = run.parents[1] / "config.yaml"
    write_config(config.parent, epochs=2)  # a resume with more epochs writes new steps
    proc = _resume(run)
    assert_clean_refusal(proc, f"{run / name} is a symlink", "skillgrad never makes one")
    assert _snapshot(outside) == before
    report = subprocess.run(
        [sys.executable, "-m", "skillgrad", "report", str(run)], capture_output=True, text=True
    )
    assert_clean_refusal(report, f"{run / name} is a symlink")


def test_a_planted_lock_symlink_is_refused_and_its_target_kept(run: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (run / "run.lock").symlink_to(victim)
    assert_clean_refusal(_resume(run), f"{run / 'run.lock'} is a symlink")
    assert victim.read_text() == "keep me"  # the lock would have truncated it
