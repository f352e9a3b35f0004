"""One training step with a real agent CLI (Claude Code, from npm) as the target, against a
scripted model server on 127.0.0.1: the skill reaches the agent's model context, the agent's
tool calls and file writes land in the trajectories, the checker scores what it wrote, and the
edit that makes the agent succeed is accepted by the gate."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agent_script import follow_skill
from tests.servers.agent_llm import request_text, serve_agent

from skillgrad.config import load_config
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.skill.package import SkillPackage
from skillgrad.testing import FunctionBackend, optimizer_call_kind, rules_reply, user_text
from skillgrad.types import ChatRequest, Trajectory

pytestmark = pytest.mark.slow

SKILL_MD = """---
name: answer-word
description: Use when asked to write the answer file.
---
# Answer word

## Rules
- Write the answer file with exactly one word.
"""
RULE = "ANSWER-WORD: FROG"


def optimizer(request: ChatRequest) -> Any:
    prompt = user_text(request)
    kind = optimizer_call_kind(request)
    if kind == "reflect":
        assert 'expected exactly \\"FROG\\"; got \\"unknown' in json.dumps(prompt)
        return rules_reply(RULE, section="Rules")
    if kind == "rank":
        return {"order": [0]}
    raise AssertionError(f"unexpected optimizer call: {prompt[:200]}")


def never(request: ChatRequest) -> str:
    raise AssertionError("a harness task must not call models.target")


def test_one_training_step_with_claude_code(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", "sk-test-key")
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "val", "test"):
        row = {
            "id": f"{split}-0",
            "prompt": "Write the answer word into answer.txt.",
            "reference": "FROG",
            "check": [{"file": "answer.txt", "equals": "FROG"}],
        }
        (data / f"{split}.jsonl").write_text(json.dumps(row) + "\n")
    pkg = tmp_path / "answer-word"
    pkg.mkdir()
    (pkg / "SKILL.md").write_text(SKILL_MD)
    with serve_agent(follow_skill("answer-word")) as server:
        options = {
            "harness": {"preset": "claude_code", "bin": str(claude_bin)},
            "endpoint": {"base_url": server.url, "model": "scripted", "api_key_env": "AGENT_KEY"},
            "split_dir": str(data),
            "timeout_s": 120,
        }
        cfg = load_config(
            data={
                "env": {"task": "skillgrad.tasks.harness:HarnessTask", "options": options,
                        "output_root": str(tmp_path / "runs"), "run_name": "cc"},
                "train": {"init_skill": str(pkg), "num_epochs": 1, "batch_size": 1,
                          "semantic_merge": False, "use_slow_update": False,
                          "use_meta_skill": False,
                          # one val item: no gain passes the default paired gate
                          "gate_rule": "strict"},
                "hardware": {"rollout_workers": 1},
            }
        )  # fmt: skip
        result = run_training(
            cfg,
            optimizer=FunctionBackend(optimizer, "function:opt"),
            target=FunctionBackend(never, "function:never"),
        )
    run = result.run_dir
    texts = [request_text(b) for b in server.bodies("anthropic")]
    assert any(RULE in t for t in texts), "the trained skill's text never reached the model"
    history = read_json(run / "history.json")
    assert history[0]["accepted"], history[0]
    assert result.summary["val_initial"] == 0.0 and result.summary["val_best"] == 1.0
    assert RULE in SkillPackage.load(run / "best_skill").file_map()["SKILL.md"]
    assert [r["edit"]["content"] for r in read_jsonl(run / "patch_log.jsonl")] == [f"- {RULE}"]
    # the agent's steps are in the stored trajectories, untruncated
    with sqlite3.connect(run / "calls.sqlite") as db:
        rows = [json.loads(r[0]) for r in db.execute("SELECT trajectory FROM results")]
    trajs = [Trajectory.from_json(r) for r in rows]
    passed = next(t for t in trajs if t.score.passed)
    tools = [s["tool"] for s in passed.steps if s["type"] == "tool_call"]
    assert tools == ["Skill", "Bash"]
    files = next(s for s in passed.steps if s["type"] == "files")["changes"]
    assert files["answer.txt"]["content"] == "FROG\n"
