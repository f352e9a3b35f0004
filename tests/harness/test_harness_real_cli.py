"""HarnessTask with real agent CLIs (installed from npm) against a scripted model on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_script import follow_skill
from tests.servers.agent_llm import Turn, request_text, serve_agent

from skillgrad.skill.package import SkillPackage
from skillgrad.tasks.harness import INFRA_PREFIX, HarnessTask
from skillgrad.testing import FunctionBackend
from skillgrad.types import to_json

pytestmark = pytest.mark.slow

SKILL = """---
name: answer-word
description: Use when asked to write the answer file.
---
# Answer word

Write the answer file with exactly one word.

ANSWER-WORD: FROG
"""


def write_splits(root: Path, n: int = 1) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "prompt": "Write the answer word into answer.txt.",
            "files": {"notes.txt": "the answer word is in your skill\n"},
            "reference": "FROG",
            "check": [{"file": "answer.txt", "equals": "FROG"}],
        }
        for i in range(n)
    ]
    for split in ("train", "val", "test"):
        (root / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return root


def make_task(tmp_path: Path, harness: dict[str, Any], url: str, **extra: Any) -> HarnessTask:
    return HarnessTask(
        base_dir=tmp_path,
        harness=harness,
        endpoint={"base_url": url, "model": "scripted-model", "api_key_env": "AGENT_TEST_KEY"},
        split_dir=str(write_splits(tmp_path)),
        timeout_s=extra.pop("timeout_s", 120),
        **extra,
    )


def bundle() -> str:
    return SkillPackage.from_files({"SKILL.md": SKILL}).bundle()


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TEST_KEY", "sk-test-not-a-real-key")


async def test_claude_code_loads_the_skill_and_writes_the_file(
    tmp_path: Path, claude_bin: Path
) -> None:
    with serve_agent(follow_skill("answer-word")) as server:
        task = make_task(tmp_path, {"preset": "claude_code", "bin": str(claude_bin)}, server.url)
        item = task.load_split("val")[0]
        traj = await task.rollout(item, bundle(), FunctionBackend(lambda r: "unused"))
    bodies = server.bodies("anthropic")
    assert any("Use when asked to write the answer file." in request_text(b) for b in bodies)
    assert any("ANSWER-WORD: FROG" in request_text(b) for b in bodies), "skill body never sent"
    assert all(r.headers.get("x-api-key") == "sk-test-not-a-real-key" for r in server.requests)
    calls = [s for s in traj.steps if s["type"] == "tool_call"]
    assert [c["tool"] for c in calls] == ["Skill", "Bash"]
    assert "answer.txt" in calls[1]["arguments"]["command"]
    assert calls[1]["observation"] is not None
    files = next(s for s in traj.steps if s["type"] == "files")["changes"]
    assert files == {"answer.txt": {"status": "created", "content": "FROG\n"}}
    assert traj.score.passed and traj.score.value == 1.0, traj.score.feedback
    assert traj.error is None and traj.output.startswith("Done")
    assert traj.usage.prompt_tokens > 0


async def test_claude_code_without_the_skill_fails_the_check(
    tmp_path: Path, claude_bin: Path
) -> None:
    with serve_agent(follow_skill("answer-word")) as server:
        task = make_task(tmp_path, {"preset": "claude_code", "bin": str(claude_bin)}, server.url)
        traj = await task.rollout(task.load_split("val")[0], "", FunctionBackend(lambda r: ""))
    assert not any("answer-word" in request_text(b) for b in server.bodies())
    assert not traj.score.passed and traj.error is None
    assert 'expected exactly "FROG"; got "unknown\\n"' in traj.score.feedback


async def test_unreachable_endpoint_is_an_infrastructure_error(
    tmp_path: Path, claude_bin: Path
) -> None:
    with serve_agent(lambda wire, body: Turn("x")) as server:
        dead = server.url  # the server is gone after this block: connection refused
    fail_fast = {"CLAUDE_CODE_MAX_RETRIES": "1"}
    harness = {"preset": "claude_code", "bin": str(claude_bin), "env": fail_fast}
    task = make_task(tmp_path, harness, dead, timeout_s=60)
    traj = await task.rollout(task.load_split("val")[0], bundle(), FunctionBackend(lambda r: ""))
    assert traj.error is not None and traj.error.startswith(INFRA_PREFIX)
    assert any(s["type"] == "infra_error" for s in traj.steps)
    assert "Unable to connect" in traj.error, traj.error


async def test_codex_reads_the_skill_and_writes_the_file(tmp_path: Path, codex_bin: Path) -> None:
    with serve_agent(follow_skill("answer-word")) as server:
        codex = {"preset": "codex", "bin": str(codex_bin)}
        task = make_task(tmp_path, codex, server.url + "/v1")
        traj = await task.rollout(
            task.load_split("val")[0], bundle(), FunctionBackend(lambda r: "")
        )
    bodies = server.bodies("responses")
    assert any("Use when asked to write the answer file." in request_text(b) for b in bodies)
    assert any("ANSWER-WORD: FROG" in request_text(b) for b in bodies)
    calls = [s for s in traj.steps if s["type"] == "tool_call"]
    assert len(calls) == 2 and "SKILL.md" in json.dumps(calls[0]["arguments"])
    assert traj.score.passed, traj.score.feedback


async def test_command_harness_runs_any_cli(tmp_path: Path) -> None:
    """Any program: here a shell script that follows the skill; it runs in the box too."""
    script = (
        'word=$(sed -n "s/^ANSWER-WORD: //p" .agents/skills/answer-word/SKILL.md)\n'
        'printf "%s\\n" "$word" > answer.txt\n'
        'echo "wrote $word ($1) in $(pwd) as $(id -u)"\n'
    )
    harness = {
        "argv": ["/bin/sh", "-c", script, "agent", "{prompt}"],
        "skills_dir": "{workdir}/.agents/skills",
    }
    task = make_task(tmp_path, harness, "http://127.0.0.1:9")
    traj = await task.rollout(task.load_split("val")[0], bundle(), FunctionBackend(lambda r: ""))
    assert traj.score.passed, traj.score.feedback
    assert traj.output.startswith(
        "wrote FROG (Write the answer word into answer.txt.) in /work/work"
    )
    assert not traj.output.endswith(" as 0")  # the box runs as an unprivileged user
    exit_step = next(s for s in traj.steps if s["type"] == "agent_exit")
    assert exit_step["isolation"].startswith("bubblewrap")


async def test_an_agent_flooding_its_output_and_files_is_bounded(tmp_path: Path) -> None:
    """Everything that comes out of an agent's box is bounded, with a marker saying what was
    cut: its output (here 40 MB of text on stdout and stderr) and the files it leaves."""
    script = (
        "head -c 40000000 /dev/zero | tr '\\0' P\n"
        "head -c 40000000 /dev/zero | tr '\\0' E >&2\n"
        "for i in $(seq 1 150); do echo $i > f$i.txt; done\n"
        "echo FROG > answer.txt\n"
    )
    harness = {"argv": ["/bin/sh", "-c", script], "skills_dir": "{workdir}/.agents/skills"}
    task = make_task(tmp_path, harness, "http://127.0.0.1:9")
    traj = await task.rollout(task.load_split("val")[0], bundle(), FunctionBackend(lambda r: ""))
    assert traj.score.passed, traj.score.feedback
    assert len(traj.output) <= 64_000 + 60 and "characters cut]..." in traj.output
    exit_step = next(s for s in traj.steps if s["type"] == "agent_exit")
    assert len(exit_step["stderr_tail"]) <= 2_000 + 60
    assert "characters cut]..." in exit_step["stderr_tail"]
    files = next(s for s in traj.steps if s["type"] == "files")["changes"]
    assert len(files) == 101 and files["..."] == {"status": "not listed", "files": 51}
    assert len(json.dumps(to_json(traj))) < 200_000
