"""A sweep of environment rollouts (``skillgrad.testing.TinyEnv`` in its environment processes,
fake models) killed with ``kill -9`` mid-run and re-run equals a sweep nobody interrupted: the
sweep summary, each seed's summary, best skill, history and patch log. The kill leaves no process
behind: the sweep's run processes die with it, and their environment processes with them (a run
left alone would go on writing and hold its run lock)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # real subprocesses
TESTS = Path(__file__).parents[1]
SEEDS = ("seed0", "seed1")
TAG = "SKILLGRAD_TEST_SWEEP_TAG"  # inherited by every process the sweep starts, reparented or not


def write_config(folder: Path) -> Path:
    """TinyEnv episodes; the fake target plays them right once its skill has the fake
    optimizer's rule. 8 train items, batch 4, 2 epochs: 4 steps per seed and a slow update.
    The paired gate (the default) with 2 rollout workers: its early rejection launches a unit
    only if the units in flight all scoring 0 could not settle a rejection, so what it evaluates
    does not depend on which call returns first, and resumes compare call for call."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(f"""
train: {{num_epochs: 2, batch_size: 4, patience: 5, learning_rate: 4, min_learning_rate: 1,
        lr_decay_on_reject: 0.5, minibatch_size: 2, stop_at_ceiling: false, gate_rule: paired}}
models:
  optimizer: {{provider: function, model: "{TESTS / "fakes_e2e.py"}:FakeOptimizer",
              options: {{latency: 0.02}}}}
  target: {{provider: function, model: "{TESTS / "fakes_env.py"}:FakeEnvTarget",
           options: {{latency: 0.05}}}}
env: {{task: environment, output_root: "{folder / "runs"}",
      options: {{env: "skillgrad.testing:TinyEnv", n_train: 8, n_val: 6, n_test: 4,
                max_steps: 4}}}}
hardware: {{rollout_workers: 2, analyst_workers: 2}}
""")
    return path


def sweep(folder: Path, workers: int) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "skillgrad", "sweep", str(folder / "config.yaml")]
    cmd += ["--out", str(folder / "sweep"), "--seeds", "2", "--workers", str(workers)]
    env = {**os.environ, TAG: str(folder)}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str]) -> str:
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return err


def tagged(folder: Path) -> dict[int, str]:
    """Live processes (not zombies) started by the sweep in ``folder``: pid -> command line."""
    found: dict[int, str] = {}
    marker = f"{TAG}={folder}".encode() + b"\0"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if marker in environ and state != "Z":
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def none_left(folder: Path, timeout: float = 5.0) -> dict[int, str]:
    """What the sweep in ``folder`` still has running after ``timeout`` (empty: nothing)."""
    deadline = time.monotonic() + timeout
    while (left := tagged(folder)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def events(run: Path) -> list[dict[str, Any]]:
    try:
        lines = (run / "events.jsonl").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        with contextlib.suppress(json.JSONDecodeError):  # the line being written
            found.append(json.loads(line))
    return found


def target_calls(run: Path, stage: str, step: int) -> int:
    """Target calls of ``stage`` at ``step`` in the run's ledger (0 before it exists)."""
    if not (run / "calls.sqlite").exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{run / 'calls.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            query = "SELECT COUNT(*) FROM calls WHERE role = 'target' AND stage = ? AND step = ?"
            return int(db.execute(query, (stage, step)).fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:  # being created
        return 0


def first_step_written(run: Path) -> bool:
    return any(e.get("event") == "step_end" and e["record"]["step"] == 1 for e in events(run))


def gate_episodes_in_flight(run: Path) -> bool:
    """The first target call of step 1's gate is answered: its episode (three actions, 0.05 s
    each) and the other worker's are between their first and last action."""
    return target_calls(run, "gate", 1) >= 1


def wait_until(check: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the sweep never got there"
        time.sleep(0.005)


def comparable(sweep_dir: Path) -> dict[str, Any]:
    """What must not depend on a kill: every number of the sweep summary and, per seed, the
    summary, best skill, history (but its timings) and patch log."""
    summary = json.loads((sweep_dir / "sweep_summary.json").read_text())
    for differs in ("sweep_dir", "config_path", "updated"):  # the folder, a timestamp
        summary.pop(differs)
    for config in summary["configs"]:  # how long each run took
        for row in config["per_run"]:
            row.pop("minutes")
    seeds: dict[str, Any] = {}
    for name in SEEDS:
        run = sweep_dir / name
        history = json.loads((run / "history.json").read_text())
        for record in history:
            record.pop("timings")
        seeds[name] = {
            "summary": json.loads((run / "summary.json").read_text()),
            "best": (run / "best_skill.md").read_text(),
            "history": history,
            "patch_log": (run / "patch_log.jsonl").read_text(),
            "skills": sorted(p.name for p in (run / "skills").iterdir()),
        }
    return {"sweep": summary, "seeds": seeds}


Reference = tuple[dict[str, Any], int]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The uninterrupted sweep, and how many target calls seed 1's first gate makes."""
    folder = tmp_path_factory.mktemp("whole")
    write_config(folder)
    finish(sweep(folder, workers=1))
    assert not none_left(folder)
    found = comparable(folder / "sweep")
    config = found["sweep"]["configs"][0]
    assert config["runs_finished"] == 2 and config["test_gain"]["values"] == [1.0, 1.0]
    return found, target_calls(folder / "sweep" / "seed1", "gate", 1)


@pytest.mark.parametrize(
    ("workers", "instant"),
    [
        (1, first_step_written),  # seed 0 finished, seed 1 between its steps 1 and 2
        (2, gate_episodes_in_flight),  # both seeds in flight, seed 1 mid-episode in its gate
    ],
)
def test_an_environment_sweep_killed_and_rerun_equals_an_uninterrupted_one(
    tmp_path: Path,
    reference: Reference,
    workers: int,
    instant: Callable[[Path], bool],
) -> None:
    write_config(tmp_path)
    seed1 = tmp_path / "sweep" / "seed1"
    proc = sweep(tmp_path, workers)
    try:
        wait_until(lambda: instant(seed1))
        running = tagged(tmp_path)
    finally:
        proc.send_signal(signal.SIGKILL)  # the sweep driver: its runs get no word of it
        proc.communicate(timeout=30)
    commands = list(running.values())
    assert any("skillgrad.sweep.pool" in c for c in commands), commands  # a run process
    assert any("skillgrad.tasks.env_worker" in c for c in commands), commands
    assert not (left := none_left(tmp_path)), f"outlived the sweep: {left}"
    assert not (seed1 / "summary.json").exists(), "a run process outlived the sweep and ended"
    whole, gate_calls = reference
    if instant is gate_episodes_in_flight:
        assert 1 <= target_calls(seed1, "gate", 1) < gate_calls  # the gate was cut inside

    again = finish(sweep(tmp_path, workers))
    assert ("seed0 skipped" in again) == (workers == 1)  # a finished run is not run again
    assert not none_left(tmp_path)
    assert comparable(tmp_path / "sweep") == whole
