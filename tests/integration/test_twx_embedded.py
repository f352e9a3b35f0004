"""TextWorldExpress end to end on the real embedded model (qwen2.5-coder-0.5b, llama.cpp, offline):
`skillgrad eval` plays a handful of Pecking Order episodes through the real package and JVM, so a
broken loader, environment process or action reader cannot land. Needs the `env` extra, a Java
runtime and `skillgrad models pull qwen2.5-coder-0.5b` (scripts/test installs all three)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="install with: pip install 'skillgrad[local]'")
pytest.importorskip("textworld_express", reason="install with: pip install 'skillgrad[env]'")
SKILL = Path(__file__).parents[2] / "docs/hand-written-skills/twx-peck.md"


def test_skillgrad_eval_plays_pecking_order_on_the_embedded_model(tmp_path: Path) -> None:
    config = tmp_path / "twx.yaml"
    config.write_text(f"""
models:
  target: {{provider: llamacpp, model: qwen2.5-coder-0.5b, temperature: 0.0}}
  optimizer: {{provider: llamacpp, model: qwen2.5-coder-0.5b, temperature: 0.0}}
env:
  task: textworld_express
  options: {{game: peckingorder, actions: free, max_steps: 6, n_train: 1, n_val: 1, n_test: 3}}
  output_root: {tmp_path / "runs"}
hardware: {{rollout_workers: 1}}
""")
    out = tmp_path / "result.json"
    cmd = [sys.executable, "-m", "skillgrad", "eval", str(config), "--skill", str(SKILL)]
    done = subprocess.run(
        [*cmd, "--split", "test", "--out", str(out)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["n"] == 3
    for item_id, row in result["items"].items():
        assert item_id.startswith("peckingorder-test-"), item_id
        assert "infra_error" not in row, row
        assert 0.0 <= row["score"] <= 1.0
        ended = ("solved in", "step limit reached", "the episode ended")
        assert row["feedback"].startswith(ended), row["feedback"]
