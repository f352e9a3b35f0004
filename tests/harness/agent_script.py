"""A scripted "model" for agent CLIs that behaves like a model following its skill.

Claude Code (Anthropic wire): call ``Skill`` for the installed skill when it is listed, then run
``Bash`` to write ``answer.txt`` with the word the skill's body prescribes (``ANSWER-WORD: X``)
or ``unknown`` without one, then finish. Codex (Responses wire): ``exec_command`` to ``cat`` the
listed SKILL.md, then ``exec_command`` to write the file, then finish. Every request is recorded
by the server, so tests assert what reached the model's context.
"""

from __future__ import annotations

import re
from typing import Any

from tests.servers.agent_llm import ToolUse, Turn, request_text

from skillgrad.testing import FunctionBackend

WORD = re.compile(r"ANSWER-WORD: ([A-Z]+)")


def _tool_results(wire: str, body: dict[str, Any]) -> int:
    if wire == "responses":
        return sum(1 for m in body.get("input", []) if m.get("type") == "function_call_output")
    return sum(
        1
        for m in body.get("messages", [])
        if isinstance(m.get("content"), list)
        and any(b.get("type") == "tool_result" for b in m["content"])
    )


def _write(word: str, wire: str) -> ToolUse:
    cmd = f"printf '%s\\n' {word} > answer.txt"
    if wire == "responses":
        return ToolUse("exec_command", {"cmd": cmd})
    return ToolUse("Bash", {"command": cmd, "description": "write the answer"})


def follow_skill(skill_name: str) -> Any:
    """The policy: load ``skill_name`` if listed, write the word it prescribes, finish."""

    def policy(wire: str, body: dict[str, Any]) -> Turn:
        text = request_text(body)
        if wire == "anthropic" and not body.get("tools"):
            return Turn("Agent run")  # side calls (e.g. a title) have no tools
        n = _tool_results(wire, body)
        listed = skill_name in text
        if n == 0 and listed:
            if wire == "anthropic":
                return Turn("Loading the skill.", (ToolUse("Skill", {"skill": skill_name}),))
            cmd = f'cat "$CODEX_HOME/skills/{skill_name}/SKILL.md"'
            return Turn("", (ToolUse("exec_command", {"cmd": cmd}),))
        found = WORD.findall(text)
        wrote = "answer.txt" in text and n >= (2 if listed else 1)
        if not wrote:
            return Turn("Writing the answer.", (_write(found[-1] if found else "unknown", wire),))
        return Turn(f"Done: wrote answer.txt ({found[-1] if found else 'unknown'}).")

    return policy


def unused_target() -> FunctionBackend:
    """``models.target`` for harness configs in tests: the agent calls its own endpoint."""

    def fail(request: object) -> str:
        raise AssertionError("a harness task must not call models.target")

    return FunctionBackend(fail, "function:unused-target")
