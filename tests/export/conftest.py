"""Real run directories for the export tests, trained with the shipped fakes through the real
CLI: a single-file skill with control arms, a skill package, and a sweep with --controls."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skillgrad.cli import app

TESTS = Path(__file__).resolve().parents[1]
FAKES = TESTS / "fakes_e2e.py"
SWEEP_FAKES = TESTS / "sweep" / "fakes_sweep.py"
SKILL_MD = "---\nname: echo-word\ndescription: Echo words.\nlicense: MIT\n---\n# Echo\n\n"
runner = CliRunner()


def _train(root: Path, name: str, train: str) -> Path:
    cfg = root / f"{name}.yaml"
    cfg.write_text(
        f"""
train: {{num_epochs: 1, batch_size: 4, {train}}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: toy, output_root: "{root / "runs"}", run_name: {name}, options: {{n_test: 5}}}}
"""
    )
    result = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert result.exit_code == 0, result.output
    return root / "runs" / name


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished single-file run with its control arms (train.controls)."""
    return _train(tmp_path_factory.mktemp("single"), "single", "controls: true")


@pytest.fixture(scope="session")
def trained_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of a skill package (SKILL.md with frontmatter + a reference file)."""
    root = tmp_path_factory.mktemp("package")
    pkg = root / "pkg"
    (pkg / "references").mkdir(parents=True)
    (pkg / "SKILL.md").write_text(SKILL_MD + "## Output format\n- Reply with the word only.\n")
    (pkg / "references" / "casing.md").write_text("# Casing\n\nKeep letters as they are.\n")
    return _train(root, "package", f'init_skill: "{pkg}"')


@pytest.fixture(scope="session")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-seed sweep with --controls (a real ``skillgrad sweep`` subprocess)."""
    root = tmp_path_factory.mktemp("sweep")
    cfg = root / "config.yaml"
    cfg.write_text(
        f"""
train: {{num_epochs: 1, batch_size: 4, learning_rate: 4, minibatch_size: 2}}
models:
  optimizer: {{provider: function, model: "{SWEEP_FAKES}:Optimizer"}}
  target: {{provider: function, model: "{SWEEP_FAKES}:Target"}}
env: {{task: toy, output_root: "{root / "runs"}", options: {{n_train: 8, n_val: 6, n_test: 4}}}}
"""
    )
    out = root / "sweep"
    cmd = [sys.executable, "-m", "skillgrad", "sweep", str(cfg), "--out", str(out)]
    cmd += ["--seeds", "2", "--controls", "--workers", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=os.environ)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def copy_of(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A private copy of a session run, for tests that damage it."""

    copies = tmp_path / "copies"

    def make(run: Path) -> Path:
        n = len(list(copies.iterdir())) if copies.exists() else 0
        return Path(shutil.copytree(run, copies / str(n) / run.name, symlinks=True))

    return make
