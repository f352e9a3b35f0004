"""Fixtures for the report / viewer tests: realistic run directories built by fixtures_runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# tests/ is not a package; make tests/fixtures_runs.py importable from here.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures_runs import build_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A finished 7-record run (6 steps + 1 slow update) under tmp_path/runs/demo."""
    return build_run(tmp_path / "runs", "demo")


@pytest.fixture
def live_run(tmp_path: Path) -> Path:
    """A run still in progress: 2 steps, no summary.json / report.md."""
    return build_run(tmp_path / "runs", "live", n_steps=2, finished=False)
