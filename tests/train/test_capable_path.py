"""Issue 10: what was added for the small optimizer (paired gate, leak refusal) does not make the
path of a capable optimizer worse. The fake optimizer of ``tests/fakes_e2e.py`` proposes a
harmful rule first, then — seeing it rejected — the helpful one; with every safeguard on, the
helpful rule is still found, accepted and lifts the held-out score."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillgrad.config import load_config
from skillgrad.session import run_training

FAKES = Path(__file__).resolve().parents[1] / "fakes_e2e.py"


def _config(tmp_path: Path, train: str) -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text(
        f"""train: {{num_epochs: 2, batch_size: 4, {train}}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: toy, output_root: "{tmp_path / "runs"}"}}
"""
    )
    return path


@pytest.mark.parametrize(
    "train",
    ["gate_rule: strict", "gate_rule: paired, reject_leaks: true, samples_per_item: 2"],
    ids=["defaults", "all-safeguards"],
)
def test_a_capable_optimizer_still_finds_and_keeps_the_helpful_rule(
    tmp_path: Path, train: str
) -> None:
    result = run_training(load_config(_config(tmp_path, train)))
    s = result.summary
    best = (result.run_dir / "best_skill.md").read_text(encoding="utf-8")
    assert "UPPERCASE" in best and "lowercase" not in best
    assert s["val_best"] > s["val_initial"]
    assert s["test_best"] > s["test_initial"]
