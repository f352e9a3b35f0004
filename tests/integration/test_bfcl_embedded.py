"""BFCL on the real embedded model: ``skillgrad eval configs/bfcl.yaml`` with SmolLM2-135M as
target (and optimizer) on three val items, so a broken loader, prompt or scorer cannot land.

Needs the BFCL data (``scripts/test`` runs ``skillgrad data pull bfcl``; the fixture pulls it
from the package index when it is missing)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.benchmarks.bfcl.data import BUNDLE

pytestmark = pytest.mark.slow
llama_cpp = pytest.importorskip("llama_cpp", reason="install with: pip install 'skillgrad[local]'")
ROOT = Path(__file__).parents[2]
SMOL = "{provider: llamacpp, model: smollm2-135m, n_threads: 1}"


def test_eval_of_the_shipped_bfcl_config_on_the_embedded_model(tmp_path: Path) -> None:
    BUNDLE.pull()
    skill = tmp_path / "skill.md"
    skill.write_text("# Function calls\n\nReply only with the calls, e.g. [f(a=1)].\n")
    out = tmp_path / "result.json"
    sets = [
        f"env.output_root={tmp_path}",
        "env.options={category: simple, n_train: 1, n_val: 3, n_test: 1, max_tokens: 64}",
        f"models.target={SMOL}",
        f"models.optimizer={SMOL}",
        "hardware.rollout_workers=1",
    ]
    cmd = [sys.executable, "-m", "skillgrad", "eval", str(ROOT / "configs/bfcl.yaml")]
    cmd += ["--skill", str(skill), "--split", "val", "--out", str(out)]
    cmd += [arg for s in sets for arg in ("--set", s)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["n"] == 3 and set(result["items"]) <= {f"simple_python_{i}" for i in range(400)}
    for item in result["items"].values():
        assert 0.0 <= item["score"] <= 1.0 and item["feedback"]
    (db,) = tmp_path.glob("_eval/*/calls.sqlite")
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select request, prompt_tokens from calls").fetchall()
    assert len(rows) == 3
    for request, prompt_tokens in rows:
        # the target saw the skill, BFCL's format instruction and the function docs
        assert "Reply only with the calls" in request and "func_name1(" in request
        assert '\\"parameters\\"' in request and prompt_tokens > 200
