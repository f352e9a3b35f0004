"""Transfer is one command: ``skillgrad eval`` runs a package folder zero-shot in another harness
(here Codex, from npm, against the scripted server; then a plain command harness), each setup
with its own result cache so one harness's results are never reused for another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from agent_script import follow_skill
from tests.servers.agent_llm import request_text, serve_agent
from typer.testing import CliRunner

from skillgrad.cli.main import app

pytestmark = pytest.mark.slow

SKILL_MD = """---
name: answer-word
description: Use when asked to write the answer file.
---
# Answer word

ANSWER-WORD: FROG
"""
SCRIPT = Path(__file__).with_name("agent_script.py")
IGNORES_SKILLS = "printf 'unknown\\n' > answer.txt; echo done"


def write_setup(root: Path) -> tuple[Path, Path]:
    data = root / "data"
    data.mkdir()
    for split in ("train", "val", "test"):
        row = {
            "id": f"{split}-0",
            "prompt": "Write the answer word into answer.txt.",
            "check": {"file": "answer.txt", "equals": "FROG"},
        }
        (data / f"{split}.jsonl").write_text(json.dumps(row) + "\n")
    package = root / "best_skill"
    package.mkdir()
    (package / "SKILL.md").write_text(SKILL_MD)
    return data, package


def config(root: Path, name: str, harness: object, endpoint: dict[str, str]) -> Path:
    cfg = {
        "env": {
            "task": "harness",
            "options": {"harness": harness, "endpoint": endpoint, "split_dir": "data"},
            "output_root": str(root / "runs"),
        },
        "models": {"target": {"provider": "function", "model": f"{SCRIPT}:unused_target"}},
    }
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_eval_runs_a_package_in_another_harness(
    tmp_path: Path, codex_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", "sk-test")
    _, package = write_setup(tmp_path)
    runner = CliRunner()
    with serve_agent(follow_skill("answer-word")) as server:
        endpoint = {"base_url": server.url + "/v1", "model": "m", "api_key_env": "AGENT_KEY"}
        codex = config(tmp_path, "codex", {"preset": "codex", "bin": str(codex_bin)}, endpoint)
        result = runner.invoke(app, ["eval", str(codex), "--skill", str(package)])
    assert result.exit_code == 0, result.output
    assert "test: mean score 1.0000" in result.output
    assert any("ANSWER-WORD: FROG" in request_text(b) for b in server.bodies("responses"))
    plain = config(tmp_path, "plain", {"argv": ["/bin/sh", "-c", IGNORES_SKILLS]}, {"base_url": ""})
    result = runner.invoke(app, ["eval", str(plain), "--skill", str(package)])
    assert result.exit_code == 0, result.output
    assert "test: mean score 0.0000" in result.output  # not the cached Codex result


def test_the_worked_example_loads(claude_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/agent_skill: configs validate, the package is valid, every item has a check."""
    from skillgrad.config import load_config
    from skillgrad.registry import load_task
    from skillgrad.skill.package import SkillPackage

    example = Path(__file__).parents[2] / "examples" / "agent_skill"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-unused")
    for name, preset in (("config.yaml", "claude_code"), ("config_codex.yaml", "codex")):
        cfg = load_config(example / name)
        assert cfg.env.task == "harness" and cfg.env.options["harness"] == preset
    cfg = load_config(example / "config.yaml")
    options = {**cfg.env.options, "harness": {"preset": "claude_code", "bin": str(claude_bin)}}
    task = load_task("harness", options, example)
    sizes = {s: len(task.load_split(s)) for s in ("train", "val", "test")}
    assert sizes == {"train": 6, "val": 4, "test": 4}
    package = SkillPackage.load(example / cfg.train.init_skill)
    assert package.name == "csv-totals" and "references/output-format.md" in package.file_map()
