"""Conventions people expect from a CLI and a library (issue 8 item 3), each tested for real."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import skillgrad
from skillgrad.cli.main import app
from skillgrad.config import load_config
from skillgrad.session import run_training

FAKES = Path(__file__).parents[1] / "fakes_e2e.py"
runner = CliRunner()


def _config(tmp_path: Path, epochs: int = 1, root: str = "runs") -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text(
        f"""
train: {{num_epochs: {epochs}, batch_size: 4, stop_at_ceiling: false}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: toy, output_root: "{tmp_path / root}"}}
"""
    )
    return path


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"skillgrad {skillgrad.__version__}"


def test_completion_enabled_and_help_has_no_markup_artefacts() -> None:
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0 and "--install-completion" in top.output
    names = re.findall(r"^  ([a-z][a-z-]+)\s", top.output.split("Commands:")[1], re.M)
    assert {"train", "eval", "config", "report", "sweep"} <= set(names)
    for name in names:
        text = runner.invoke(app, [name, "--help"], terminal_width=100).output
        for artefact in ("``", "[bold", "[/", "\x1b[", "\b"):
            assert artefact not in text, (name, artefact, text)
        if name in ("train", "eval", "config"):  # type names are no metavars
            assert "list[str]" not in text, text


def test_verbosity_maps_to_log_levels(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    normal = runner.invoke(app, ["train", str(cfg)])
    assert normal.exit_code == 0, normal.output
    assert re.search(r"^step +1 ep 1", normal.output, re.M)  # INFO: a line per step
    assert "event step_start" not in normal.output  # DEBUG hidden
    verbose = runner.invoke(app, ["-v", "train", str(cfg), "--set", "env.run_name=v"])
    assert "event step_start" in verbose.output
    quiet = runner.invoke(app, ["--quiet", "train", str(cfg), "--set", "env.run_name=q"])
    assert quiet.exit_code == 0 and not re.search(r"^step +1", quiet.output, re.M)


def test_library_logs_run_events_under_the_skillgrad_logger(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logging.getLogger("skillgrad").propagate = True  # a CLI test may have detached it
    with caplog.at_level(logging.DEBUG, logger="skillgrad"):
        run_training(load_config(_config(tmp_path)))
    names = {r.name for r in caplog.records}
    assert "skillgrad.events" in names and "skillgrad.session" in names
    assert any(r.getMessage().startswith("baseline val score") for r in caplog.records)


def test_eval_min_score_exits_1_below_the_threshold(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    skill = tmp_path / "runs/toy/best_skill.md"
    ok = runner.invoke(app, ["eval", str(cfg), "--skill", str(skill), "--min-score", "0.9"])
    assert ok.exit_code == 0, ok.output
    empty = tmp_path / "empty.md"
    empty.write_text("")
    low = runner.invoke(app, ["eval", str(cfg), "--skill", str(empty), "--min-score", "0.5"])
    assert low.exit_code == 1 and "below --min-score 0.5" in low.output


def test_config_schema_and_generated_reference_in_sync() -> None:
    schema = runner.invoke(app, ["config", "--schema"])
    parsed = json.loads(schema.output)
    assert {"train", "models", "env", "budget"} <= set(parsed["properties"])
    markdown = runner.invoke(app, ["config", "--markdown"]).output
    docs = Path(__file__).resolve().parents[2] / "docs" / "config.md"
    assert markdown == docs.read_text(encoding="utf-8"), (
        "docs/config.md is stale: run `skillgrad config --markdown > docs/config.md`"
    )


def test_finished_run_continues_with_more_epochs(tmp_path: Path) -> None:
    cfg = _config(tmp_path, epochs=1)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    run = tmp_path / "runs/toy"
    one = json.loads((run / "history.json").read_text())
    more = runner.invoke(app, ["train", str(cfg), "--quiet", "--set", "train.num_epochs=2"])
    assert more.exit_code == 0, more.output
    two = json.loads((run / "history.json").read_text())
    assert len(two) > len(one) and two[: len(one)] == one
    assert {r["epoch"] for r in two} == {1, 2}
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished"
    fewer = runner.invoke(app, ["train", str(cfg), "--quiet", "--set", "train.num_epochs=1"])
    assert fewer.exit_code == 2 and "it may only grow" in fewer.output


def test_report_is_formatted_text_and_brackets_in_paths_survive(tmp_path: Path) -> None:
    cfg = _config(tmp_path, root="out [bold]x[/bold]")
    result = runner.invoke(app, ["train", str(cfg)], terminal_width=400)
    assert result.exit_code == 0, result.output
    assert "out [bold]x[/bold]" in result.output  # the path, literally
    report = runner.invoke(app, ["report", str(tmp_path / "out [bold]x[/bold]" / "toy")])
    assert report.exit_code == 0, report.output
    assert "##" not in report.output  # Markdown headings are rendered, not shown raw
    assert "validation score" in report.output


def test_report_off_a_terminal_wraps_long_lines_and_never_crops_them(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    run = tmp_path / "runs/toy"
    report = runner.invoke(app, ["report", str(run)], terminal_width=80)
    assert report.exit_code == 0, report.output
    shown = " ".join(report.output.split())
    bullets = [x[2:] for x in (run / "report.md").read_text().splitlines() if x.startswith("- ")]
    long = [b for b in bullets if len(b) > 76]
    assert long  # the report has bullets longer than the width: they must wrap, whole
    for bullet in long:
        assert " ".join(bullet.replace("`", "").replace("**", "").split()) in shown, bullet
