"""Small config traps (issue 11 §6): duplicate YAML keys, learning_rate below its floor, bad
``--set`` YAML and an unusable output_root — each a clear error, exit code 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.config import load_config
from skillgrad.errors import ConfigError

FAKES = Path(__file__).parent / "fakes_e2e.py"


def _config(tmp_path: Path, root: Path, extra: str = "") -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text(
        f"""train: {{num_epochs: 1, batch_size: 4}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: toy, output_root: "{root}"}}
{extra}"""
    )
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", *args], capture_output=True, text=True, timeout=120
    )


def test_a_second_budget_section_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = _config(
        tmp_path, tmp_path / "runs", "budget:\n  max_calls: 5\nbudget:\n  max_calls: 100000\n"
    )
    with pytest.raises(
        ConfigError, match=r"toy.yaml: key 'budget' appears twice \(line 6 and line 8\)"
    ):
        load_config(path)


def test_duplicate_keys_are_refused_in_nested_sections_and_bases(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("train:\n  batch_size: 2\n  batch_size: 3\n")
    (tmp_path / "top.yaml").write_text("_base_: base.yaml\n")
    with pytest.raises(
        ConfigError, match=r"base.yaml: key 'batch_size' appears twice \(line 2 and line 3\)"
    ):
        load_config(tmp_path / "top.yaml")


def test_learning_rate_below_its_floor_is_refused_naming_both() -> None:
    with pytest.raises(
        ConfigError, match=r"learning_rate \(0.5\) is below min_learning_rate \(2\)"
    ):
        load_config(data={"train": {"learning_rate": 0.5, "min_learning_rate": 2}})
    load_config(data={"train": {"learning_rate": 2, "min_learning_rate": 2}})  # equal is fine


def test_bad_set_yaml_is_a_clear_error_exit_2(tmp_path: Path) -> None:
    proc = _cli("train", str(_config(tmp_path, tmp_path / "runs")), "--set", "train.batch_size=[1")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "--set 'train.batch_size=[1': invalid YAML" in proc.stderr
    assert "quote it to pass text" in proc.stderr


def test_duplicate_key_through_the_cli_exit_2(tmp_path: Path) -> None:
    path = _config(tmp_path, tmp_path / "runs", "budget: {max_calls: 5}\nbudget: {max_calls: 9}\n")
    proc = _cli("train", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "key 'budget' appears twice" in proc.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("notes: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("a: &a [1, 2]\nb: [" + ", ".join(["*a"] * 101) + "]\n", "more than 100 aliases"),
    ],
)
def test_yaml_too_deep_or_alias_heavy_is_a_clear_error_exit_2(
    tmp_path: Path, extra: str, message: str
) -> None:
    proc = _cli("train", str(_config(tmp_path, tmp_path / "runs", extra)))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"toy.yaml: {message}" in proc.stderr


def test_unusable_output_root_is_a_clear_error_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    proc = _cli("train", str(_config(tmp_path, blocker / "runs")))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "cannot create or lock the run directory" in proc.stderr
    assert "env.output_root" in proc.stderr


def test_a_huge_init_skill_warns_with_its_cost_and_a_normal_one_does_not(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    huge = tmp_path / "huge.md"
    # ~30,000 words (~2 tokens each by the fallback counter): far above LARGE_SKILL_TOKENS
    huge.write_text("# Notes\n\n" + "Remember the customer order ledger entry. " * 5000)
    cfg = _config(
        tmp_path,
        root,
        f'budget: {{max_calls: 40}}\ntrain: {{num_epochs: 1, batch_size: 4, init_skill: "{huge}"}}',
    )
    cfg.write_text(cfg.read_text().replace("train: {num_epochs: 1, batch_size: 4}\n", "", 1))
    proc = _cli("train", str(cfg))
    message = " ".join(proc.stderr.split())
    assert "the starting skill (train.init_skill) is" in message, proc.stderr[-3000:]
    assert "MB" in message and "of the estimated" in message and "Check that init_skill" in message
    events = (root / "toy" / "events.jsonl").read_text(encoding="utf-8")
    assert '"event": "warning"' in events and "train.init_skill" in events

    small = tmp_path / "small.md"
    small.write_text("# Rules\n\nAnswer briefly.\n")
    cfg.write_text(cfg.read_text().replace(str(huge), str(small)))
    quiet = _cli("train", str(cfg), "--fresh")
    assert "the starting skill (train.init_skill)" not in quiet.stderr
