"""Environment rollouts inside real ``skillgrad`` processes: Ctrl-C and ``kill -9`` during an
environment step leave no environment process behind, and a training run on ``TinyEnv`` killed
mid-step and resumed equals an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interruptible import SKILLGRAD

pytestmark = pytest.mark.slow  # subprocesses
FAKES = Path(__file__).parents[1]


def children(pid: int) -> list[int]:
    """Environment processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"skillgrad.tasks.env_worker" in cmdline:
            found.append(int(entry.name))
    return found


def group_gone(pgid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def hanging_config(tmp: Path) -> Path:
    path = tmp / "hang.yaml"
    path.write_text(f"""
models:
  optimizer: {{provider: function, model: "{FAKES / "fakes_env.py"}:HangingEnvTarget"}}
  target: {{provider: function, model: "{FAKES / "fakes_env.py"}:HangingEnvTarget"}}
env:
  task: environment
  output_root: "{tmp / "runs"}"
  options: {{env: "skillgrad.testing:TinyEnv", env_options: {{traps: true}},
            n_train: 1, n_val: 1, n_test: 2, step_timeout: 600}}
hardware: {{rollout_workers: 2}}
""")
    (tmp / "skill.md").write_text("Act.\n")
    return path


def start_hanging(tmp: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    config = hanging_config(tmp)
    cmd = [*SKILLGRAD, "eval", str(config), "--skill", str(tmp / "skill.md"), "--split", "test"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(children(proc.pid)) < 2:
        time.sleep(0.1)
    workers = children(proc.pid)
    assert len(workers) == 2, "the two environment processes never started"
    time.sleep(1.0)  # both episodes are now waiting inside a hanging step
    return proc, workers


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_ctrl_c_and_kill_during_a_hanging_step_leave_no_environment_behind(
    tmp_path: Path, sig: signal.Signals
) -> None:
    proc, workers = start_hanging(tmp_path)
    started = time.monotonic()
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert time.monotonic() - started < 15
    if sig == signal.SIGINT:
        assert proc.returncode != 0
    for pgid in workers:  # each environment process leads its own group
        assert group_gone(pgid), f"environment process group {pgid} outlived the run"


def train_config(tmp: Path) -> Path:
    path = tmp / "config.yaml"
    path.write_text(f"""
train: {{num_epochs: 2, batch_size: 4, patience: 5, learning_rate: 4, min_learning_rate: 1,
        lr_decay_on_reject: 0.5, minibatch_size: 2}}
models:
  optimizer: {{provider: function, model: "{FAKES / "fakes_e2e.py"}:FakeOptimizer",
              options: {{latency: 0.02}}}}
  target: {{provider: function, model: "{FAKES / "fakes_env.py"}:FakeEnvTarget",
           options: {{latency: 0.02}}}}
env: {{task: environment, output_root: "{tmp / "runs"}", run_name: run,
      options: {{env: "skillgrad.testing:TinyEnv", n_train: 8, n_val: 6, n_test: 4,
                max_steps: 4}}}}
hardware: {{rollout_workers: 2, analyst_workers: 2}}
""")
    return path


def train(config: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "skillgrad", "train", str(config), "--quiet"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def comparable(run: Path) -> dict[str, object]:
    history = json.loads((run / "history.json").read_text())
    for record in history:
        record.pop("timings")
    return {
        "history": history,
        "best": (run / "best_skill.md").read_text(),
        "summary": json.loads((run / "summary.json").read_text()),
        "patch_log": (run / "patch_log.jsonl").read_text(),
    }


def wait_event(events: Path, name: str, step: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if events.exists():
            for line in events.read_text().splitlines():
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if event.get("event") == name and event.get("step") == step:
                    return
        time.sleep(0.005)
    raise AssertionError(f"{name} step={step} never appeared")


def test_a_run_killed_mid_step_and_resumed_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    whole.mkdir(), cut.mkdir()
    done = train(train_config(whole))
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err.decode()[-3000:]
    reference = comparable(whole / "runs/run")
    summary = reference["summary"]
    assert isinstance(summary, dict) and (summary["val_initial"], summary["val_best"]) == (0.0, 1.0)

    config = train_config(cut)
    proc = train(config)
    try:
        wait_event(cut / "runs/run/events.jsonl", "step_start", 2)
        time.sleep(0.05)  # rollouts of step 2 in flight
        workers = children(proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert all(group_gone(w) for w in workers)
    again = train(config)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()[-3000:]
    assert comparable(cut / "runs/run") == reference
