"""A run directory written by skillgrad before the layout renovation (commit b45e323: a toy run
of one epoch with the shipped fakes, ``tests/fixtures/old_run_b45e323``) still reports and
resumes with the code of today, exactly as that version did: the same report text, and after
a second epoch the same history, summary, best skill, report and files as that version wrote
when it resumed the same directory (timings and paths aside)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from skillgrad.cli.main import app
from skillgrad.runs.provenance import UNKNOWN, code_provenance

FIXTURE = Path(__file__).parent / "fixtures" / "old_run_b45e323"
EXPECTED = FIXTURE / "expected"
WIDTH = {"COLUMNS": "100"}  # the width the expected reports were printed at


@pytest.fixture
def old_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(FIXTURE / "old_run", tmp_path / "old_run")
    shutil.copy(FIXTURE / "config.yaml", tmp_path / "config.yaml")
    monkeypatch.chdir(tmp_path)  # env.output_root is "."
    return tmp_path / "old_run"


# What later versions add to a run's records (issues 26 and 27): the old version did not write them.
NEW_RECORD_KEYS = {
    "stall_reason",
    "example_alone",
    "pruned",
    "prune_kept",
    "explore_attempts",
    "explore_found",
    "explore_repeats",
    "explore_better",
    "explore_resumed",
    "explore_redrawn",
    "explore_ends",
    "explore_fell",
}
NEW_SUMMARY_KEYS = {
    "noise_floor",
    "controls",
    "stalled_steps",
    "examples",
    "steps_nothing_applied",
    "code",
}


def _without_timings(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    drop = {"timings", *NEW_RECORD_KEYS}
    return [{k: v for k, v in r.items() if k not in drop} for r in history]


def _ungated_rule_as_old(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A step no gate decided records no gate rule today; the old version wrote "strict"."""
    return [r | {"gate_rule": "strict"} if r["gate_rule"] is None else r for r in history]


def _resumed_on_todays_code(summary: dict[str, Any]) -> None:
    """A run begun before code was recorded: its start is unknown, the resume is listed."""
    assert summary["code"] == {
        **UNKNOWN.to_json(),
        "resumed_with": [code_provenance().to_json()],
    }


def _without_code_line(report: str) -> str:
    """The report without its code bullet (the resuming code: today's commit)."""
    return "\n".join(x for x in report.split("\n") if "code: unknown; resumed with" not in x)


def _without_noise_floor(report: str) -> str:
    """The report without the gate's noise-floor bullet (measured on resume, issue 27)."""
    lines, out, skipping = report.split("\n"), [], False
    for line in lines:
        if "• noise floor" in line:
            skipping = True
            continue
        if skipping and line.startswith("   ") and not line.lstrip().startswith("•"):
            continue
        skipping = False
        out.append(line)
    return "\n".join(out)


def test_an_old_run_reports_as_it_did(old_run: Path) -> None:
    out = CliRunner().invoke(app, ["report", str(old_run.name)], env=WIDTH)
    assert out.exit_code == 0, out.output
    assert out.output == (EXPECTED / "report_before.txt").read_text(encoding="utf-8")


def test_an_old_run_resumes_to_what_the_old_version_wrote(old_run: Path) -> None:
    config = Path("config.yaml")
    config.write_text(config.read_text().replace("num_epochs: 1", "num_epochs: 2"))
    runner = CliRunner()
    # as the old version did: on past the reward ceiling (a run may turn the stop off on resume)
    old_way = ["--set", "train.stop_at_ceiling=false"]
    trained = runner.invoke(app, ["train", str(config), "--quiet", *old_way], env=WIDTH)
    assert trained.exit_code == 0, trained.output
    history = json.loads((old_run / "history.json").read_text())
    assert all(r["gate_rule"] is None for r in history if r["gate_total"] == 0)
    history = _ungated_rule_as_old(_without_timings(history))
    assert history == json.loads((EXPECTED / "history_after.json").read_text())
    summary = json.loads((old_run / "summary.json").read_text())
    assert set(summary) >= NEW_SUMMARY_KEYS
    _resumed_on_todays_code(summary)
    summary = {k: v for k, v in summary.items() if k not in NEW_SUMMARY_KEYS}
    assert summary == json.loads((EXPECTED / "summary_after.json").read_text())
    best = (old_run / "best_skill.md").read_text()
    assert best == (EXPECTED / "best_skill_after.md").read_text()
    files = sorted(f"./{p.relative_to(old_run)}" for p in old_run.rglob("*") if p.is_file())
    assert files == (EXPECTED / "files_after.txt").read_text().split()
    report = runner.invoke(app, ["report", str(old_run.name)], env=WIDTH)
    assert report.exit_code == 0, report.output
    assert "noise floor" in report.output
    expected = (EXPECTED / "report_after.txt").read_text(encoding="utf-8")
    assert _without_code_line(_without_noise_floor(report.output)) == expected


# -- an environment run with worked examples, written at c28278c ---------------------------------

ENV_FIXTURE = Path(__file__).parent / "fixtures" / "old_run_c28278c_env"
ENV_EXPECTED = ENV_FIXTURE / "expected"
# What later versions add to a run's records and summary: c28278c did not write them.
ENV_NEW_RECORD_KEYS = {
    "pruned",
    "prune_kept",
    "explore_attempts",
    "explore_found",
    "explore_repeats",
    "explore_better",
    "explore_resumed",
    "explore_redrawn",
    "explore_ends",
    "explore_fell",
}
ENV_NEW_SUMMARY_KEYS = {"code"}


@pytest.fixture
def old_env_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ENV_FIXTURE / "old_run", tmp_path / "old_env_run")
    shutil.copy(ENV_FIXTURE / "config.yaml", tmp_path / "config.yaml")
    monkeypatch.chdir(tmp_path)  # env.output_root is "."
    return tmp_path / "old_env_run"


def test_an_old_environment_run_reports_as_it_did(old_env_run: Path) -> None:
    out = CliRunner().invoke(app, ["report", old_env_run.name], env=WIDTH)
    assert out.exit_code == 0, out.output
    assert out.output == (ENV_EXPECTED / "report_before.txt").read_text(encoding="utf-8")


def test_an_old_environment_run_resumes_to_what_the_old_version_wrote(old_env_run: Path) -> None:
    """Episodes (their steps as c28278c stored them) and worked examples resume: a second epoch
    gives the history, summary, best skill, files and report c28278c wrote."""
    config = Path("config.yaml")
    config.write_text(config.read_text().replace("num_epochs: 1", "num_epochs: 2"))
    runner = CliRunner()
    trained = runner.invoke(app, ["train", str(config), "--quiet"], env=WIDTH)
    assert trained.exit_code == 0, trained.output
    history = json.loads((old_env_run / "history.json").read_text())
    drop = {"timings", *ENV_NEW_RECORD_KEYS}
    history = [{k: v for k, v in r.items() if k not in drop} for r in history]
    assert history == json.loads((ENV_EXPECTED / "history_after.json").read_text())
    summary = json.loads((old_env_run / "summary.json").read_text())
    _resumed_on_todays_code(summary)
    summary = {k: v for k, v in summary.items() if k not in ENV_NEW_SUMMARY_KEYS}
    assert summary == json.loads((ENV_EXPECTED / "summary_after.json").read_text())
    best = (old_env_run / "best_skill.md").read_text()
    assert best == (ENV_EXPECTED / "best_skill_after.md").read_text()
    files = sorted(f"./{p.relative_to(old_env_run)}" for p in old_env_run.rglob("*") if p.is_file())
    assert files == (ENV_EXPECTED / "files_after.txt").read_text().split()
    report = runner.invoke(app, ["report", old_env_run.name], env=WIDTH)
    assert report.exit_code == 0, report.output
    expected = (ENV_EXPECTED / "report_after.txt").read_text(encoding="utf-8")
    assert _without_code_line(report.output) == expected
