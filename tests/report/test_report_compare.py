"""Comparing runs: final numbers, differing config settings, overlaid curves."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_runs import build_run
from skillgrad.errors import RunDirError
from skillgrad.report.compare import compare_runs, config_differences, write_compare_html
from skillgrad.runs.io import flatten
from skillgrad.runs.view import load_run


def test_compare_two_finished_runs_and_one_live(tmp_path: Path) -> None:
    a = build_run(tmp_path, "base")
    b = build_run(tmp_path, "slow-lr", lr=1.0, score_shift=0.1,
                  config_overrides={"train.seed": 3, "optimizer.new_knob": True})  # fmt: skip
    c = build_run(tmp_path, "live", n_steps=3, finished=False)
    result = compare_runs([a, b, c])
    assert result.names == ("base", "slow-lr", "live")
    rows = {r["run"]: r for r in result.rows}
    assert rows["base"]["val_best"] == 1.0 and rows["slow-lr"]["val_best"] == pytest.approx(0.9)
    assert rows["slow-lr"]["test_best"] == pytest.approx(0.733)
    assert rows["base"]["cost"] == 0.021 and rows["base"]["calls"] == 84
    # the live run has no summary: numbers come from its history
    assert rows["live"]["status"] == "running" and rows["live"]["steps"] == 3
    assert rows["live"]["val_best"] == 0.667 and rows["live"]["cost"] == pytest.approx(0.009)
    assert result.config_diff == {
        "optimizer.lr": (2.0, 1.0, 2.0),
        "optimizer.new_knob": (None, True, None),
        "train.seed": (0, 3, 0),
    }
    assert result.curves_png.startswith(b"\x89PNG")
    page = write_compare_html(result, tmp_path / "cmp" / "compare.html").read_text()
    assert (tmp_path / "cmp" / "compare_curves.png").exists()
    assert "http://" not in page and "https://" not in page
    assert "<code>optimizer.new_knob</code>" in page and "slow-lr" in page


def test_compare_needs_two_runs_and_real_dirs(tmp_path: Path) -> None:
    a = build_run(tmp_path, "one")
    with pytest.raises(RunDirError, match="at least two"):
        compare_runs([a])
    with pytest.raises(RunDirError, match="no such run directory"):
        compare_runs([a, tmp_path / "missing"])


def test_same_names_are_told_apart_and_identical_configs(tmp_path: Path) -> None:
    a = build_run(tmp_path / "x", "r")
    b = build_run(tmp_path / "y", "r")
    result = compare_runs([a, b])
    assert result.names == ("x/r", "y/r")
    assert result.config_diff == {}  # run_name/resolved_at are ignored by design
    assert config_differences([load_run(a)]) == {}


def test_flatten() -> None:
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": None}) == {
        "a.b": 1,
        "a.c": "[1, 2]",
        "d": None,
    }
