"""Helpers for the executor tests: the ``code`` benchmark config with the fakes of
``fakes_executors.py``, and a command-harness task whose agent is a shell script."""

from __future__ import annotations

import json
from pathlib import Path

from skillgrad.tasks.harness import HarnessTask

FAKES = Path(__file__).with_name("fakes_executors.py")
AGENT_KEY = "sk-agent-key-0123456789abcdef"  # the harness endpoint's key (AGENT_KEY variable)


def code_config(folder: Path, executor: str, *, run_name: str = "code", extra: str = "") -> Path:
    """A one-epoch run of the ``code`` benchmark (real bubblewrap sandbox) with the fakes;
    ``strict``: no gain could pass the default paired gate on 3 val items, and these runs test
    where rollouts run, not the gate."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_name}.yaml"
    path.write_text(
        f"""
train: {{num_epochs: 1, batch_size: 2, gate_rule: strict}}
models:
  optimizer: {{provider: function, model: "{FAKES}:Optimizer"}}
  target: {{provider: function, model: "{FAKES}:Target"}}
env:
  task: code
  options: {{n_train: 2, n_val: 3, n_test: 3}}
  output_root: "{folder / "runs"}"
  run_name: {run_name}
hardware: {{executor: {executor}, rollout_workers: 2{extra}}}
""",
        encoding="utf-8",
    )
    return path


SKILL = """---
name: answer-word
description: Use when asked to write the answer file.
---
ANSWER-WORD: FROG
"""
# prints when it ran (host clock) and the key it was given, which must come back as ***
AGENT = (
    "start=$(date +%s.%N); sleep 1.5\n"
    'sed -n "s/^ANSWER-WORD: //p" .agents/skills/answer-word/SKILL.md > answer.txt\n'
    'echo "span $start $(date +%s.%N) key=$AGENT_SEES"\n'
)


def agent_task(root: Path, max_parallel: int) -> HarnessTask:
    """A command harness (a shell script) on 4 val items; endpoint key in ``AGENT_KEY``."""
    data = root / "data"
    data.mkdir()
    for split, n in (("train", 1), ("val", 4), ("test", 1)):
        rows = [
            {
                "id": f"{split}-{i}",
                "prompt": "Write the answer word into answer.txt.",
                "check": {"file": "answer.txt", "equals": "FROG"},
            }
            for i in range(n)
        ]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return HarnessTask(
        base_dir=root,
        harness={
            "argv": ["/bin/sh", "-c", AGENT],
            "skills_dir": "{workdir}/.agents/skills",
            "env": {"AGENT_SEES": "{api_key}"},
        },
        endpoint={"base_url": "http://127.0.0.1:9", "model": "m", "api_key_env": "AGENT_KEY"},
        split_dir="data",
        max_parallel=max_parallel,
        timeout_s=60,
    )
