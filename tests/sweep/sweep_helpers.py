"""Helpers for sweep tests: a fake-model config, the sweep command as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

FAKES = Path(__file__).parent / "fakes_sweep.py"
GRID = ["--grid", "train.lr_scheduler=constant,cosine"]


def write_config(folder: Path, latency: float = 0.02, epochs: int = 2) -> Path:
    """The toy task with fake models logging every completed call to folder/calls.log."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "calls.log"
    opts = f"{{latency: {latency}, log: '{log}'}}"
    text = f"""
train: {{num_epochs: {epochs}, batch_size: 4, patience: 5, learning_rate: 4, min_learning_rate: 1,
        lr_decay_on_reject: 0.5, minibatch_size: 2}}
models:
  optimizer: {{provider: function, model: "{FAKES}:Optimizer", options: {opts}}}
  target: {{provider: function, model: "{FAKES}:Target", options: {opts}}}
env: {{task: toy, output_root: "{folder / "runs"}", options: {{n_train: 8, n_val: 6, n_test: 4}}}}
hardware: {{rollout_workers: 2, analyst_workers: 2}}
"""
    path = folder / "config.yaml"
    path.write_text(text)
    return path


def sweep_cmd(config: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "skillgrad", "sweep", str(config), "--out", str(out), *extra]


def run_sweep(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=os.environ)


def calls(folder: Path) -> Counter[str]:
    log = folder / "calls.log"
    return Counter(log.read_text().splitlines()) if log.exists() else Counter()


def wait_for_step(run: Path, step: int, timeout: float = 120) -> None:
    """Until the run's events.jsonl shows ``step_start`` of ``step``."""
    deadline = time.monotonic() + timeout
    events = run / "events.jsonl"
    while time.monotonic() < deadline:
        if events.exists():
            for line in events.read_text().splitlines():
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if e.get("event") == "step_start" and e.get("step") == step:
                    return
        time.sleep(0.005)
    raise AssertionError(f"{run}: step {step} never started")


def holder_pid(run: Path) -> int:
    """The pid of the process writing ``run`` (its run.lock record)."""
    return int(json.loads((run / "run.lock").read_text())["pid"])


def comparable_summary(sweep: Path) -> list[dict[str, object]]:
    """sweep_summary.json configs without what legitimately differs (none of the numbers but
    the minutes each run took)."""
    data = json.loads((sweep / "sweep_summary.json").read_text())
    out = []
    for c in data["configs"]:
        rows = [{k: v for k, v in r.items() if k != "minutes"} for r in c["per_run"]]
        out.append({**{k: v for k, v in c.items() if k != "status"}, "per_run": rows})
    return out


IN_FLIGHT = 2  # calls a killed run may have had answered but not cached (rollout/analyst workers)
KILLED_RUN = "c0_lr_scheduler-constant_seed0"


def uninterrupted(folder: Path, *extra: str) -> tuple[list[dict[str, object]], Counter[str]]:
    """A sweep that nobody interrupts: its summary and every call its runs paid for."""
    config = write_config(folder)
    done = run_sweep(sweep_cmd(config, folder / "sweep", "--seeds", "2", *GRID, *extra))
    assert done.returncode == 0, done.stderr
    return comparable_summary(folder / "sweep"), calls(folder)


def kill_one_run_then_resume(folder: Path, *extra: str) -> tuple[str, str]:
    """Start the sweep, SIGKILL the process running one run mid-step, let the sweep end, re-run
    the same command. Returns the two invocations' stderr."""
    import signal

    config = write_config(folder)
    cmd = sweep_cmd(config, folder / "sweep", "--seeds", "2", *GRID, *extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run = folder / "sweep" / KILLED_RUN
        wait_for_step(run, 2, timeout=180)
        pid = holder_pid(run)
        assert pid != proc.pid  # a worker process, not the sweep driver
        os.kill(pid, signal.SIGKILL)
        _, first_err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, first_err
    assert not (run / "summary.json").exists()  # it really was cut short
    again = run_sweep(cmd)
    assert again.returncode == 0, again.stderr
    return first_err, again.stderr


def assert_nothing_paid_twice(made: Counter[str], reference: Counter[str]) -> None:
    """Every call the reference paid was paid here as often, plus at most the in-flight calls
    answered in the instant before the kill; nothing else was paid twice."""
    assert set(made) == set(reference)
    extra = made - reference
    assert sum(extra.values()) <= IN_FLIGHT, f"calls paid twice: {dict(extra)}"
    assert not reference - made
