"""A package run SIGKILLed mid-run (a real ``skillgrad train`` subprocess) and run again ends
exactly where an uninterrupted run does: same best package folder, same versions, no torn
package folders left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

FAKES = Path(__file__).parents[1] / "fakes_e2e.py"
SKILL_MD = "---\nname: echo-word\ndescription: Echo words.\n---\n# Echo\n\n## Output format\n"


def write_config(root: Path, name: str) -> Path:
    pkg = root / f"pkg-{name}"
    (pkg / "references").mkdir(parents=True)
    (pkg / "SKILL.md").write_text(SKILL_MD + "- Reply with the word only.\n")
    (pkg / "references" / "casing.md").write_text("# Casing\n\nKeep letters as they are.\n")
    fake = f'{{provider: function, model: "{FAKES}:ROLE", options: {{latency: 0.02}}}}'
    cfg = f"""
train: {{init_skill: "{pkg}", num_epochs: 2, batch_size: 4, learning_rate: 4,
        min_learning_rate: 1, lr_decay_on_reject: 0.5, minibatch_size: 2}}
models: {{optimizer: {fake.replace("ROLE", "FakeOptimizer")},
         target: {fake.replace("ROLE", "FakeTarget")}}}
env: {{task: toy, output_root: "{root / "runs"}", run_name: {name},
      options: {{n_train: 8, n_val: 8, n_test: 4}}}}
hardware: {{rollout_workers: 2, analyst_workers: 2}}
"""
    path = root / f"{name}.yaml"
    path.write_text(cfg)
    return path


def train(config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "skillgrad", "train", str(config), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )


def finish(proc: subprocess.Popen[bytes]) -> None:
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()


def wait_for_step(events: Path, step: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in events.read_text().splitlines() if events.exists() else []:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("event") == "step_start" and event.get("step") == step:
                return
        time.sleep(0.005)
    raise AssertionError(f"step {step} never started")


def folder(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_killed_package_run_resumes_to_the_same_package(tmp_path: Path) -> None:
    finish(train(write_config(tmp_path, "whole")))
    config = write_config(tmp_path, "killed")
    run = tmp_path / "runs" / "killed"
    proc = train(config)
    wait_for_step(run / "events.jsonl", 2)
    time.sleep(0.05)  # into step 2's calls
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (run / "summary.json").exists()  # killed mid-run, not after it
    finish(train(config))
    whole = tmp_path / "runs" / "whole"
    assert folder(run / "best_skill") == folder(whole / "best_skill")
    assert "UPPERCASE" in (run / "best_skill" / "SKILL.md").read_text()
    versions = sorted(p.name for p in (whole / "skills").iterdir())
    assert sorted(p.name for p in (run / "skills").iterdir()) == versions
    for name in versions:
        if not name.endswith(".md"):
            assert folder(run / "skills" / name) == folder(whole / "skills" / name)
    assert not [p for p in run.rglob(".*") if ".tmp-" in p.name or ".old-" in p.name]
