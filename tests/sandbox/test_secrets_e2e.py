"""End to end: a target whose code hunts for the training process's API key, through a real
`skillgrad train` of the `code` benchmark; the key is in nothing the run writes or sends."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FAKES = Path(__file__).with_name("fakes_leak.py")


def _config(tmp_path: Path, options: str = "") -> Path:
    path = tmp_path / "code.yaml"
    path.write_text(
        f"""
# strict: no gain passes the default paired gate on 2 val items (this tests the key's path)
train: {{num_epochs: 1, batch_size: 2, gate_rule: strict}}
models:
  optimizer: {{provider: function, model: "{FAKES}:RecordingOptimizer"}}
  target: {{provider: function, model: "{FAKES}:HuntingTarget"}}
env:
  task: code
  options: {{n_train: 2, n_val: 2, n_test: 2{options}}}
  output_root: "{tmp_path / "runs"}"
  run_name: hunt
""",
        encoding="utf-8",
    )
    return path


def _train(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", "train", str(config)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def test_the_api_key_never_reaches_trajectories_ledger_or_optimizer(tmp_path: Path) -> None:
    canary = "sk-canary-" + secrets.token_hex(16)
    prompts = tmp_path / "prompts.log"
    env = {**os.environ, "OPENAI_API_KEY": canary, "SKILLGRAD_PROMPT_LOG": str(prompts)}
    proc = _train(_config(tmp_path), env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    run = tmp_path / "runs" / "hunt"
    written = [p for p in run.rglob("*") if p.is_file()]
    names = {p.name for p in written}
    assert {"trajectories.jsonl", "calls.sqlite"} <= names, names
    trajectories = b"".join(p.read_bytes() for p in written if p.name == "trajectories.jsonl")
    # the hunt ran, and what it found was recorded and shown to the optimizer
    assert b"HUNTED: " in trajectories
    assert prompts.exists() and "HUNTED: " in prompts.read_text(encoding="utf-8")
    for path in [*written, prompts]:
        assert canary.encode() not in path.read_bytes(), f"the key leaked into {path}"
    assert canary not in proc.stdout + proc.stderr


def test_without_bubblewrap_code_tasks_refuse_unless_unsandboxed_is_named(tmp_path: Path) -> None:
    canary = "sk-canary-" + secrets.token_hex(16)
    env = {**os.environ, "PATH": str(tmp_path / "no-bin"), "OPENAI_API_KEY": canary}
    refused = _train(_config(tmp_path), env)
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    message = " ".join((refused.stdout + refused.stderr).split())
    assert "bubblewrap (`bwrap`) is not installed" in message
    assert "apt-get install bubblewrap" in message and "sandbox: unsandboxed" in message
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "runs" / "hunt" / "calls.sqlite").exists()

    opted = _train(_config(tmp_path, ", sandbox: unsandboxed"), env)
    assert opted.returncode == 0, opted.stdout[-2000:] + opted.stderr[-3000:]
    run = tmp_path / "runs" / "hunt"
    assert '"sandbox": "unsandboxed"' in (run / "config.json").read_text(encoding="utf-8")
    steps = (run / "steps" / "step_0001" / "trajectories.jsonl").read_text(encoding="utf-8")
    assert '"isolation": "unsandboxed+separate-judge"' in steps
    # Why the box matters: outside it, the same hunt reads the key from its parent's environ
    # (only the write-time redaction of known key values keeps it off the disk).
    assert "OPENAI_API_KEY=***" in steps
    assert canary not in steps
