"""Every text that comes out of the box is bounded, with a marker saying what was cut: each
test's error, the solution's load error, stdout and stderr (``run_tests`` / ``run_code``), and
so everything a `skillgrad train` of the `code` benchmark writes about them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.sandbox import run_code, run_tests
from skillgrad.sandbox.bounds import ERROR_CHARS, OUTPUT_CHARS

pytestmark = pytest.mark.slow

FAKES = Path(__file__).with_name("fakes_flood.py")
HUGE = 2_900_000
SLACK = 60  # the marker


def test_each_tests_error_is_cut_with_a_marker() -> None:
    code = f"def f(*a):\n    raise ValueError('A' * {HUGE})\n"
    tests = "".join(f"assert f({i}) == {i}\n" for i in range(5))
    result = run_tests(code, tests, timeout_s=20, memory_mb=256)
    assert result.tests_total == 5 and result.tests_passed == 0
    for test in result.tests:
        assert len(test["error"]) <= ERROR_CHARS + SLACK
        assert test["error"].startswith("Traceback") or "ValueError" in test["error"]
        assert "characters cut]..." in test["error"] and test["error"].endswith("AAAA")
    assert len(result.summary()) <= 1200 + SLACK


@pytest.mark.parametrize("kind", ["ValueError", "SystemExit", "AssertionError"])
def test_an_error_while_loading_is_cut_with_a_marker(kind: str) -> None:
    code = f"raise {kind}('B' * {HUGE})\ndef f():\n    return 1\n"
    result = run_tests(code, "assert f() == 1\n", timeout_s=20, memory_mb=256)
    assert not result.passed and len(result.errors) == 1
    (error,) = result.errors
    assert len(error) <= ERROR_CHARS + SLACK and "characters cut]..." in error


def test_stdout_and_stderr_are_cut_with_a_marker() -> None:
    code = f"import sys\nprint('P' * {HUGE})\nsys.stderr.write('E' * {HUGE})\nraise SystemExit(3)\n"
    result = run_code(code, timeout_s=20, memory_mb=256)
    assert result.returncode == 3
    for text in (result.stdout, result.stderr):
        assert len(text) <= OUTPUT_CHARS + SLACK and "bytes cut]..." in text


def test_a_training_run_on_flooding_code_writes_a_small_run_directory(tmp_path: Path) -> None:
    config = tmp_path / "code.yaml"
    config.write_text(
        f"""
# strict: no gain passes the default paired gate on 2 val items (this tests the output bound)
train: {{num_epochs: 1, batch_size: 2, gate_rule: strict}}
models:
  optimizer: {{provider: function, model: "{FAKES}:ToyOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FloodingTarget"}}
env:
  task: code
  options: {{n_train: 2, n_val: 2, n_test: 2}}
  output_root: "{tmp_path / "runs"}"
  run_name: flood
""",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "skillgrad", "train", str(config)],
        env=dict(os.environ), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    run = tmp_path / "runs" / "flood"
    size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
    assert size < 2_000_000, f"the run directory holds {size} bytes"  # was 139 MB
    steps = (run / "steps" / "step_0001" / "trajectories.jsonl").read_text(encoding="utf-8")
    assert steps.count("characters cut]...") >= 4  # stdout, stderr and each test's error
