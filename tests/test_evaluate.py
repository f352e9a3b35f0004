"""``skillgrad eval`` and ``train`` build their session once per command: the task, its splits
and the target are made once, whatever else the command scores (a baseline, repeats)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from skillgrad.cli.main import app

FAKES = Path(__file__).parent / "fakes_e2e.py"
runner = CliRunner()


def _counted(tmp: Path) -> tuple[Path, Path]:
    """A task module (the toy task and the fake target) that writes one line to a log each time
    a task or a target is built and each time a split is loaded; its path and the log's."""
    log = tmp / "built.log"
    module = tmp / "counted.py"
    module.write_text(
        f"""
import importlib.util
from dataclasses import dataclass
from skillgrad.testing import ToyTask

spec = importlib.util.spec_from_file_location("fakes_e2e_counted", {str(FAKES)!r})
fakes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fakes)


def _log(line):
    with open({str(log)!r}, "a", encoding="utf-8") as f:
        f.write(line + "\\n")


@dataclass
class CountedToy(ToyTask):
    def __post_init__(self):
        super().__post_init__()
        _log("task")

    def load_split(self, split):
        _log("split " + split)
        return super().load_split(split)


class CountedTarget(fakes.FakeTarget):
    def __init__(self):
        super().__init__()
        _log("target")
""",
        encoding="utf-8",
    )
    return module, log


def _config(tmp: Path, module: Path) -> Path:
    config = tmp / "counted.yaml"
    config.write_text(
        f"""
train: {{num_epochs: 1, batch_size: 4, noise_repeats: 2}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{module}:CountedTarget"}}
env: {{task: "{module}:CountedToy", output_root: "{tmp / "runs"}", run_name: counted}}
""",
        encoding="utf-8",
    )
    return config


def _built(log: Path) -> Counter[str]:
    counts = Counter(log.read_text(encoding="utf-8").splitlines())
    log.unlink()
    return counts


def test_eval_with_a_baseline_and_repeats_builds_task_splits_and_target_once(
    tmp_path: Path,
) -> None:
    module, log = _counted(tmp_path)
    config = _config(tmp_path, module)
    skill, empty = tmp_path / "skill.md", tmp_path / "empty.md"
    skill.write_text("Always answer with the word in UPPERCASE.\n", encoding="utf-8")
    empty.write_text("", encoding="utf-8")
    args = ["eval", str(config), "--skill", str(empty), "--baseline", str(skill)]
    result = runner.invoke(app, [*args, "--split", "val", "--repeat", "2", "--headroom"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "val: mean score 0.0000" in text and "baseline: mean score 1.0000" in text
    assert "noise floor (A/A, 2 passes" in text and "headroom: initial val score 0.000" in text
    once = {"task": 1, "target": 1, "split train": 1, "split val": 1, "split test": 1}
    assert _built(log) == once


def test_train_loads_each_split_once(tmp_path: Path) -> None:
    module, log = _counted(tmp_path)
    result = runner.invoke(app, ["train", str(_config(tmp_path, module)), "--quiet"])
    assert result.exit_code == 0, result.output
    assert _built(log) == {
        "task": 1,
        "target": 1,
        "split train": 1,
        "split val": 1,
        "split test": 1,
    }
