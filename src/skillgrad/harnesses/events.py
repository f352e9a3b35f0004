"""Read an agent's output into trajectory steps: every model turn, tool call and observation.

One parser per output format: ``claude_stream_json`` (``claude -p --output-format stream-json
--verbose``), ``codex_jsonl`` (``codex exec --json``) and ``text`` (stdout is the final answer).
Steps use the same shapes as ``ToolTask`` (``model``, ``tool_call`` with ``observation``), plus
``context`` for text the agent injected (e.g. a loaded skill) and ``agent_error``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skillgrad.runs.io import json_objects
from skillgrad.sandbox.bounds import ERROR_CHARS, cut, cut_strings
from skillgrad.skill.text import valid_text
from skillgrad.types import Usage

STEP_CHARS = 20_000  # one text of a step (a tool's output, a message) as kept
FINAL_CHARS = 64_000  # the agent's final answer


@dataclass(frozen=True)
class Transcript:
    """What an agent did. ``error`` is the agent's own report of a failed run (None if it
    finished); ``infra`` says that failure was the endpoint or the agent program, not the model."""

    steps: tuple[dict[str, Any], ...]
    final: str
    usage: Usage = field(default_factory=Usage)
    finished: bool = False
    error: str | None = None
    infra: bool = False


def _call(ident: Any, tool: Any, arguments: Any, observation: Any, ok: Any) -> dict[str, Any]:
    """A tool-call step (the shape ``ToolTask`` uses); ``observation`` None until it returns."""
    return {"type": "tool_call", "id": ident, "tool": tool, "arguments": arguments,
            "observation": observation, "ok": ok}  # fmt: skip


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(c.get("text", c.get("content", ""))) for c in content if isinstance(c, dict)
        )
    return "" if content is None else json.dumps(content)


def parse_claude(stdout: str) -> Transcript:
    """Claude Code ``stream-json``: system / assistant / user / result events."""
    steps: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    final, usage, finished, error, infra = "", Usage(), False, None, False
    for ev in json_objects(stdout):
        kind, msg = ev.get("type"), ev.get("message") or {}
        content = msg.get("content") if isinstance(msg, dict) else None
        if kind == "assistant" and isinstance(content, list):
            for block in content:
                if block.get("type") == "text" and block.get("text"):
                    steps.append({"type": "model", "text": block["text"]})
                elif block.get("type") == "tool_use":
                    call = _call(block.get("id"), block.get("name"), block.get("input"), None, None)
                    calls[str(block.get("id"))] = call
                    steps.append(call)
        elif kind == "user" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
                    call = calls[str(block.get("tool_use_id"))]
                    call["observation"] = _text_of(block.get("content"))
                    call["ok"] = not block.get("is_error", False)
                elif block.get("type") == "text":
                    steps.append({"type": "context", "text": block.get("text", "")})
        elif kind == "result":
            final = str(ev.get("result") or "")
            u = ev.get("usage") or {}
            usage = Usage(int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0))
            finished = not ev.get("is_error")
            if ev.get("is_error"):
                error = f"{ev.get('subtype', 'error')}: {final or ev.get('errors') or ''}".strip()
                infra = bool(ev.get("api_error_status")) or "API Error" in final
    return Transcript(tuple(steps), final, usage, finished, error, infra)


def parse_codex(stdout: str) -> Transcript:
    """Codex ``exec --json``: thread / turn / item events (agent_message, command_execution,
    file_change, mcp_tool_call, reasoning, error)."""
    steps: list[dict[str, Any]] = []
    final, usage, finished, error = "", Usage(), False, None
    for ev in json_objects(stdout):
        kind = ev.get("type")
        item = ev.get("item") or {}
        if kind == "item.completed":
            t = item.get("type")
            if t == "agent_message":
                final = str(item.get("text", ""))
                steps.append({"type": "model", "text": final})
            elif t == "reasoning":
                steps.append({"type": "reasoning", "text": item.get("text", "")})
            elif t == "command_execution":
                args = {"command": item.get("command")}
                out = item.get("aggregated_output", "")
                step = _call(item.get("id"), "exec_command", args, out, item.get("exit_code") == 0)
                steps.append({**step, "exit_code": item.get("exit_code")})
            elif t == "file_change":
                args, status = {"changes": item.get("changes")}, item.get("status", "")
                steps.append(
                    _call(item.get("id"), "apply_patch", args, status, status == "completed")
                )
            elif t == "mcp_tool_call":
                out, ok = _text_of(item.get("result")), item.get("status") == "completed"
                steps.append(
                    _call(item.get("id"), item.get("tool"), item.get("arguments"), out, ok)
                )
            elif t == "error":
                steps.append({"type": "agent_error", "text": item.get("message", "")})
        elif kind == "turn.completed":
            u = ev.get("usage") or {}
            usage = usage + Usage(int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0))
            finished = True
        elif kind in ("turn.failed", "error"):
            err = ev.get("error") or {}
            error = str(err.get("message") if isinstance(err, dict) else err) or str(
                ev.get("message")
            )
    # Codex reports an unreachable or failing endpoint as a failed turn (after its own retries)
    return Transcript(
        tuple(steps), final, usage, finished and error is None, error, error is not None
    )


def parse_text(stdout: str) -> Transcript:
    """A plain CLI: stdout is the final answer (made valid UTF-8, as the JSON formats are by
    ``json_objects``)."""
    text = valid_text(stdout.strip())
    return Transcript(({"type": "model", "text": text},), text, Usage(), True)


def bounded(transcript: Transcript) -> Transcript:
    """``transcript`` with every text cut to a bound (a marker says what was cut): each text of a
    step to ``STEP_CHARS``, the final answer to ``FINAL_CHARS``. The agent's output is the box's
    to choose, and every step is stored in trajectories, the results cache and prompts."""
    steps = tuple(cut_strings(step, STEP_CHARS) for step in transcript.steps)
    error = None if transcript.error is None else cut(transcript.error, ERROR_CHARS)
    final = cut(transcript.final, FINAL_CHARS)
    return dataclasses.replace(transcript, steps=steps, final=final, error=error)


PARSERS: dict[str, Callable[[str], Transcript]] = {
    "claude_stream_json": parse_claude,
    "codex_jsonl": parse_codex,
    "text": parse_text,
}

__all__ = ["PARSERS", "Transcript", "parse_claude", "parse_codex", "parse_text"]
