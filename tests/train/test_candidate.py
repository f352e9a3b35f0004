"""A step's one candidate in whole runs with the shipped fakes, and the retired setting of
several candidates per step (``train.candidates_per_step``, removed: K = 3 did not beat K = 1,
docs/benchmarks.md): configs, run directories and history files that name it at its neutral
value still load and resume; another value is a clear error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from skillgrad.cli.main import app
from skillgrad.config import load_config
from skillgrad.errors import ConfigError
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.types import StepRecord

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_e2e import FAKES_PATH, make_optimizer, make_target

FAKES = Path(__file__).parents[1] / "fakes_e2e.py"
MODELS = {
    "optimizer": {"provider": "function", "model": f"{FAKES}:FakeOptimizer"},
    "target": {"provider": "function", "model": f"{FAKES}:FakeTarget"},
}


def _data(tmp_path: Path, **train: Any) -> dict[str, Any]:
    return {
        "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
        "train": {"num_epochs": 1, "batch_size": 4, **train},
        "models": MODELS,
    }


def test_a_step_writes_its_one_candidates_files(tmp_path: Path) -> None:
    result = run_training(
        load_config(data=_data(tmp_path)), optimizer=make_optimizer(), target=make_target()
    )
    step = result.run_dir / "steps/step_0001"
    names = {p.name for p in step.iterdir()}
    assert {"candidate.md", "gate.json", "apply_report.json", "leaks.json"} <= names
    assert not list(result.run_dir.glob("steps/*/candidates*"))
    assert "candidates_per_step" not in result.summary
    assert all("candidates" not in r for r in read_json(result.run_dir / "history.json"))


def test_preflight_bounds_the_usage_with_check_targets(tmp_path: Path) -> None:
    check = {"provider": "function", "model": f"{FAKES_PATH}:FakeCheckTarget"}
    cfg = load_config(data=_data(tmp_path, check_targets=[check]))
    result = run_training(cfg, optimizer=make_optimizer(), target=make_target())
    pre = next(e for e in read_jsonl(result.run_dir / "events.jsonl") if e["event"] == "preflight")
    usage = result.summary["usage"]
    for role in ("optimizer", "target", "check_target"):
        assert pre["calls"][role] >= usage[role]["calls"] > 0, role


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"candidates_per_step": 3}, "train.candidates_per_step: 3: removed: several candidates"),
        ({"candidate_temperature": 1.0}, "renamed train.reask_temperature"),
    ],
)
def test_a_retired_setting_at_another_value_says_what_became_of_it(
    tmp_path: Path, setting: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(data=_data(tmp_path, **setting))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps(_data(tmp_path, **setting)))
    out = CliRunner().invoke(app, ["train", str(cfg), "--quiet"])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert message.split(":")[0] in out.output


def test_a_run_from_the_version_with_candidates_resumes(tmp_path: Path) -> None:
    neutral = {"candidates_per_step": 1, "candidate_temperature": 0.7}
    assert load_config(data=_data(tmp_path, **neutral)).train.reask_temperature == 0.7
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps(_data(tmp_path, num_epochs=1)))
    runner = CliRunner()
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    run = tmp_path / "run"
    stored = json.loads((run / "config.json").read_text())
    stored["train"].update(neutral)  # as that version wrote it
    (run / "config.json").write_text(json.dumps(stored))
    cfg.write_text(json.dumps(_data(tmp_path, num_epochs=2)))
    again = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert again.exit_code == 0, again.output
    assert len(read_json(run / "history.json")) > 1
    # its history records carried a candidates list (empty with one candidate): still read
    record = {"step": 1, "epoch": 1, "kind": "step", "candidates": []}
    assert StepRecord.from_json(record).step == 1
