"""``skillgrad transfer`` onto the real embedded model: a tiny 2-seed sweep with --vary-split,
trained with the fakes on the toy task (3 test items), then both skills of each run scored on
SmolLM2-135M through llama.cpp; the calls land in each run's eval cache and a re-run pays none."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.runs.io import read_jsonl
from skillgrad.testing import ToyTask

pytestmark = pytest.mark.slow
llama_cpp = pytest.importorskip("llama_cpp", reason="install with: pip install 'skillgrad[local]'")
FAKES = Path(__file__).parents[1] / "fakes_e2e.py"
SMOL = "{provider: llamacpp, model: smollm2-135m, n_threads: 1}"
SMOL_NAME = "llamacpp:smollm2-135m"
GOOD_RULE = "Always answer with the word in UPPERCASE."  # what the fake optimizer teaches


def skillgrad(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "skillgrad", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def ledger(sweep: Path) -> list[tuple[str, str]]:
    """(run, request) of every call paid into the runs' eval caches."""
    rows = []
    for db in sorted(sweep.glob("*/_eval/*/calls.sqlite")):
        with sqlite3.connect(db) as conn:
            rows += [(db.parents[2].name, r[0]) for r in conn.execute("select request from calls")]
    return rows


def test_transfer_onto_the_embedded_model(tmp_path: Path) -> None:
    config = tmp_path / "toy.yaml"
    config.write_text(f"""
train: {{num_epochs: 1, batch_size: 4, minibatch_size: 2, learning_rate: 4, min_learning_rate: 1,
        lr_decay_on_reject: 0.5, patience: 5}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: toy, output_root: "{tmp_path / "runs"}", options: {{n_train: 8, n_val: 4, n_test: 3}}}}
hardware: {{rollout_workers: 1}}
""")
    sweep = tmp_path / "sweep"
    made = skillgrad("sweep", str(config), "--seeds", "2", "--vary-split", "--workers", "1",
                     "--out", str(sweep))  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    done = skillgrad("transfer", str(sweep), "--target_model", SMOL)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((sweep / "transfer_summary.json").read_text())
    assert data["targets"] == [f"function:{FAKES}:FakeTarget", SMOL_NAME]
    cell = data["configs"][0]["targets"][SMOL_NAME]
    assert cell["main"] is False and cell["seeds"] == [0, 1]
    for key in ("initial", "best"):
        assert len(cell[key]["values"]) == 2 and all(0 <= v <= 1 for v in cell[key]["values"])
    test = cell["paired_test"]
    assert test["n_pairs"] + test["missing_pairs"] == 6
    for run in ("seed0", "seed1"):
        rows = read_jsonl(sweep / run / "transfer.jsonl")
        assert [(r["setup"], r["n"]) for r in rows] == [(f"toy / {SMOL_NAME}", 3)] * 2
    paid = ledger(sweep)
    assert len(paid) == 12  # 2 runs x 2 skills x 3 items, each on its run's own split
    assert sum(GOOD_RULE in request for _, request in paid) == 6  # the best skills' calls
    for seed, run in enumerate(("seed0", "seed1")):  # --vary-split: env.options.seed = seed
        task = ToyTask(n_train=8, n_val=4, n_test=3, seed=seed)
        words = {f"Word: {item.input}" for item in task.load_split("test")}
        asked = {w for r, request in paid if r == run for w in words if w in request}
        assert asked == words and sum(r == run for r, _ in paid) == 6
    again = skillgrad("transfer", str(sweep), "--target_model", SMOL)
    assert again.returncode == 0, again.stderr[-3000:]
    assert ledger(sweep) == paid  # nothing paid twice
    assert json.loads((sweep / "transfer_summary.json").read_text())["configs"] == data["configs"]
