"""Training a skill package end to end with the shipped fakes: edits to SKILL.md, to a reference
file and to the description are applied, gated and logged; best_skill/ is a valid package; a run
stopped mid-way and resumed ends where an uninterrupted one does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from skillgrad.callbacks import Control
from skillgrad.config import load_config
from skillgrad.dashboard.data import accepted_edits
from skillgrad.report.provenance import blame, skill_diff
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.runs.view import load_run
from skillgrad.session import run_training
from skillgrad.skill.document import Skill
from skillgrad.skill.package import SkillPackage, prompt_text
from skillgrad.testing import FunctionBackend, optimizer_call_kind, system_text, user_text
from skillgrad.types import ChatRequest

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_e2e import GOOD_RULE, optimizer_reply, target_reply

SKILL_MD = """---
name: echo-word
description: Echo words.
---
# Echo

## Output format
- Reply with the word only.
"""
CASING = "# Casing\n\nKeep each letter as it is.\n"
REF_RULE = "Upper-case every letter."
DESCRIPTION = "Use when asked to echo a word; answers in upper case."


def make_package(root: Path) -> Path:
    (root / "references").mkdir(parents=True)
    (root / "SKILL.md").write_text(SKILL_MD)
    (root / "references" / "casing.md").write_text(CASING)
    return root


def package_optimizer(request: ChatRequest) -> Any:
    """Reflection proposes one edit to each of SKILL.md, a reference file and the description;
    every other call kind is answered like the single-file fakes."""
    prompt = user_text(request)
    kind = optimizer_call_kind(request)
    if kind == "reflect" and "UPPERCASE" not in prompt:
        assert "<!-- skillgrad:file references/casing.md -->" in prompt  # it sees every file
        return {
            "rules": [
                {"rule": GOOD_RULE, "section": "Output format"},
                {"rule": REF_RULE, "replaces": "Keep each letter as it is."},
            ],
            "description": DESCRIPTION,
        }
    if kind == "reflect":
        return {"rules": [{"rule": "x", "section": "Notes"}]}
    return optimizer_reply(request)


def seen_target(log: list[str]) -> FunctionBackend:
    def reply(request: ChatRequest) -> str:
        log.append(system_text(request))
        return target_reply(request)

    return FunctionBackend(reply, "function:fake-target")


def config(tmp_path: Path, name: str) -> Any:
    return load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": name},
            "train": {
                "init_skill": str(make_package(tmp_path / f"pkg-{name}")),
                "num_epochs": 2,
                "batch_size": 4,
                "learning_rate": 4,
                "min_learning_rate": 1,
                "semantic_merge": False,
            },
        }
    )


def test_package_training_end_to_end(tmp_path: Path) -> None:
    systems: list[str] = []
    optimizer = FunctionBackend(package_optimizer, "function:fake-optimizer")
    result = run_training(config(tmp_path, "a"), optimizer=optimizer, target=seen_target(systems))
    run = result.run_dir
    # the chat target sees the rendered package: body, then the reference under its path
    assert systems and all(
        "skillgrad:file" not in s and "name: echo-word" not in s for s in systems
    )
    assert any("# references/casing.md" in s for s in systems)
    history = read_json(run / "history.json")
    assert history[0]["accepted"] and history[0]["n_applied"] == 3
    best = SkillPackage.load(run / "best_skill")
    assert best.name == "echo-word" and best.description == DESCRIPTION
    assert GOOD_RULE in best.file_map()["SKILL.md"]
    assert best.file_map()["references/casing.md"] == "# Casing\n\nUpper-case every letter.\n"
    assert (run / "best_skill.md").read_text() == best.file_map()["SKILL.md"]
    assert result.summary["val_best"] == 1.0
    # provenance: each applied edit logged with its file and the trajectories behind it
    log = read_jsonl(run / "patch_log.jsonl")
    by_op = {(r["edit"]["op"], r["edit"]["file"]): r for r in log}
    assert set(by_op) == {("add", ""), ("replace", "references/casing.md"), ("description", "")}
    assert all(r["edit"]["trajectory_ids"] for r in log)
    # every version is kept as a bundle and as an installable folder
    v0 = SkillPackage.load(run / "skills" / "skill_v0000")
    assert v0.file_map()["SKILL.md"] == SKILL_MD
    assert (run / "skills" / "skill_v0001.md").read_text() == best.bundle()
    assert prompt_text(best.bundle()).startswith("# Echo")
    # diff, blame and the report see every file of the package
    diff = skill_diff(run, None, None)
    assert "<!-- skillgrad:file references/casing.md -->" in diff
    assert "-Keep each letter as it is." in diff and f"+{REF_RULE}" in diff
    assert f"+description: {DESCRIPTION}" in diff
    origin = {b.text: b for b in blame(run)}
    assert origin[REF_RULE].source == "reflect" and origin[REF_RULE].step == 1
    assert origin[f"description: {DESCRIPTION}"].source == "reflect"
    assert origin["- Reply with the word only."].source == "initial"
    shown = accepted_edits(load_run(run))  # the dashboard's table of accepted edits
    assert {e["file"] for e in shown} == {"", "references/casing.md"}
    assert load_run(run).best_skill == best.bundle()
    report = (run / "report.md").read_text()
    assert "`references/casing.md`: 9 -> 8 tokens" in report and "`(total)`" in report


class StopAfterFirstStep:
    def on_event(self, event: dict[str, Any], control: Control) -> None:
        if event["event"] == "step_end":
            control.request_stop("test: stop after step 1")


def test_package_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    opt = FunctionBackend(package_optimizer, "function:fake-optimizer")
    whole = run_training(config(tmp_path, "whole"), optimizer=opt, target=seen_target([]))
    cfg = config(tmp_path, "split")
    first = run_training(
        cfg, optimizer=opt, target=seen_target([]), callbacks=[StopAfterFirstStep()]
    )
    assert read_json(first.run_dir / "runtime_state.json")
    again = run_training(cfg, optimizer=opt, target=seen_target([]))
    for rel in ("best_skill.md", "best_skill/SKILL.md", "best_skill/references/casing.md"):
        assert (again.run_dir / rel).read_text() == (whole.run_dir / rel).read_text()
    keys = ("val_best", "test_best", "val_initial")
    assert {k: again.summary[k] for k in keys} == {k: whole.summary[k] for k in keys}


def test_init_skill_folder_is_validated(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Bad Name\ndescription: x\n---\nbody\n")
    cfg = config(tmp_path, "v")
    cfg = cfg.model_copy(update={"train": cfg.train.model_copy(update={"init_skill": str(bad)})})
    try:
        run_training(cfg, optimizer=FunctionBackend(package_optimizer), target=seen_target([]))
    except Exception as exc:
        assert "name 'Bad Name' must be lowercase" in str(exc), exc
    else:
        raise AssertionError("an invalid package must not train")
    assert json.loads(json.dumps(Skill.load(make_package(tmp_path / "ok")).text))


def test_eval_of_a_runs_package_is_listed_in_its_report(tmp_path: Path) -> None:
    """Transfer: one ``skillgrad eval`` of <run>/best_skill with another target is recorded in
    the run and shown by ``skillgrad report``."""
    from typer.testing import CliRunner

    from skillgrad.cli.main import app

    optimizer = FunctionBackend(package_optimizer, "function:fake-optimizer")
    run = run_training(config(tmp_path, "t"), optimizer=optimizer, target=seen_target([])).run_dir
    fakes = Path(__file__).parents[1] / "fakes_e2e.py"
    other = tmp_path / "other.yaml"
    other.write_text(
        f"env: {{task: toy, output_root: '{tmp_path / 'evals'}'}}\n"
        f"models: {{target: {{provider: function, model: '{fakes}:FakeTarget'}}}}\n"
    )
    runner = CliRunner()
    result = runner.invoke(app, ["eval", str(other), "--skill", str(run / "best_skill")])
    assert result.exit_code == 0, result.output
    assert "test: mean score 1.0000" in result.output
    report = runner.invoke(app, ["report", str(run)])
    assert report.exit_code == 0, report.output
    assert "Transfer evaluations" in report.output
    rows = read_jsonl(run / "transfer.jsonl")
    assert [(r["setup"], r["split"], r["mean_score"]) for r in rows] == [
        (f"toy / function:{fakes}:FakeTarget", "test", 1.0)
    ]
