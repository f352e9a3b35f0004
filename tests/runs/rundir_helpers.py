"""Real ``python -m skillgrad train`` subprocesses on the shipped fakes (toy task, fast models)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

FAKES = Path(__file__).parents[1] / "fakes_e2e.py"
HOLDING = Path(__file__).parent / "holding_fake.py"


class hold:
    """``with hold(folder) as reached:`` a run configured with ``hold_from_step`` stops at its
    first target call from that step on until the block ends; ``reached()`` waits for that."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "hold"

    def __enter__(self) -> hold:
        self.path.touch()
        return self

    def reached(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not Path(f"{self.path}.reached").exists():
            assert time.monotonic() < deadline, "the run never reached the hold"
            time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)


def write_config(
    folder: Path, latency: float = 0.0, epochs: int = 1, hold_from_step: int | None = None
) -> Path:
    """A toy-task config whose run directory is ``folder/runs/run``. With ``hold_from_step``,
    the target waits from that step on while ``folder/hold`` exists (see ``hold``)."""
    target = f'{FAKES}:FakeTarget", options: {{latency: {latency}}}'
    if hold_from_step is not None:
        target = (
            f'{HOLDING}:HoldingTarget", options: {{latency: {latency}, '
            f'hold: "{folder / "hold"}", from_step: {hold_from_step}}}'
        )
    cfg = f"""
train: {{num_epochs: {epochs}, batch_size: 4, patience: 5, learning_rate: 4,
        min_learning_rate: 1, minibatch_size: 2}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer", options: {{latency: {latency}}}}}
  target: {{provider: function, model: "{target}}}
env: {{task: toy, output_root: "{folder / "runs"}", run_name: run,
      options: {{n_train: 8, n_val: 4, n_test: 2}}}}
hardware: {{rollout_workers: 2, analyst_workers: 2}}
"""
    path = folder / "config.yaml"
    path.write_text(cfg)
    return path


def start_train(
    config: Path, call_log: Path | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    env = {**os.environ, "COLUMNS": "1000", **(extra_env or {})}  # no wrapped messages
    if call_log is not None:
        env["SKILLGRAD_CALL_LOG"] = str(call_log)
    return subprocess.Popen(
        [sys.executable, "-m", "skillgrad", "train", str(config), "--quiet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def train(
    config: Path, call_log: Path | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = start_train(config, call_log, extra_env)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def events(run: Path) -> list[dict[str, object]]:
    rows = []
    for line in (run / "events.jsonl").read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def wait_for_event(run: Path, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (run / "events.jsonl").exists() and any(e.get("event") == name for e in events(run)):
            return
        time.sleep(0.01)
    raise AssertionError(f"event {name!r} never appeared in {run}")


def assert_clean_refusal(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2, no traceback, and the message names what it must."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    text = " ".join(proc.stderr.split())
    for needle in needles:
        assert needle in text, (needle, proc.stderr)
