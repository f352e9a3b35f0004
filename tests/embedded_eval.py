"""`skillgrad eval` of a built-in benchmark on the real embedded model (SmolLM2-135M, the default
target), in a subprocess as a user runs it: the shared body of the per-benchmark CI tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def eval_on_embedded(tmp_path: Path, task: str, options: str, skill: str) -> dict[str, Any]:
    """Score ``skill`` on the test split of ``task`` (``options``: the flow mapping of
    ``env.options``); the command must exit 0. Returns the ``--out`` result."""
    config = tmp_path / f"{task}.yaml"
    config.write_text(
        f"env:\n  task: {task}\n  options: {options}\n  output_root: {tmp_path / 'runs'}\n",
        encoding="utf-8",
    )
    skill_file = tmp_path / "skill.md"
    skill_file.write_text(skill, encoding="utf-8")
    out = tmp_path / "result.json"
    cmd = [sys.executable, "-m", "skillgrad", "eval", str(config), "--skill", str(skill_file)]
    done = subprocess.run(
        [*cmd, "--split", "test", "--out", str(out)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result
