"""A token-budgeted text view of a trajectory's steps, for the optimizer.

Trajectories keep every step untruncated on disk; the optimizer's prompt has room for only so
much. ``transcript_view`` renders steps (model text, tool calls with arguments and observations,
files the agent wrote, errors) and, when over budget, shortens the longest fields first and then
drops middle steps — always saying exactly what was cut, so the optimizer never mistakes a cut
for the agent's behaviour.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from skillgrad.skill.document import approx_tokens


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _fields(step: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """(a head line, [(label, long text)]) for one step."""
    kind = str(step.get("type", "step"))
    if kind == "tool_call":
        ok = {True: "ok", False: "failed", None: "no result"}.get(step.get("ok"), "")
        return f"tool call {step.get('tool')} ({ok})", [
            ("arguments", _dump(step.get("arguments"))),
            ("observation", _dump(step.get("observation") or "")),
        ]
    if kind == "files":
        changes = step.get("changes") or {}
        if not changes:
            return "files: none created or changed", []
        out = []
        for path, info in changes.items():
            out.append((f"{path} [{info.get('status')}]", _dump(info.get("content", ""))))
        return f"files the agent left ({len(changes)})", out
    if kind in ("model", "context", "reasoning", "agent_error"):
        return kind, [("text", _dump(step.get("text", "")))]
    if kind == "agent_exit":
        return (
            f"agent exit: code {step.get('returncode')}, {step.get('duration_s')}s"
            + (", timed out" if step.get("timed_out") else ""),
            [],
        )
    rest = {k: v for k, v in step.items() if k != "type"}
    return kind, [("data", _dump(rest))] if rest else []


def _render(
    heads: list[tuple[str, list[tuple[str, str]]]], cap: int | None, start: int = 0
) -> tuple[list[str], int]:
    lines, cut = [], 0
    for i, (head, fields) in enumerate(heads, start):
        lines.append(f"[{i}] {head}")
        for label, text in fields:
            if cap is not None and len(text) > cap:
                cut += len(text) - cap
                half = cap // 2
                text = f"{text[:half]} …[{len(text) - cap} chars cut]… {text[-half:]}"
            lines.append(f"    {label}: {text}")
    return lines, cut


def transcript_view(
    steps: Sequence[dict[str, Any]],
    max_tokens: int = 1500,
    counter: Callable[[str], int] = approx_tokens,
) -> str:
    """The steps as text within ``max_tokens`` (by ``counter``), with a note of what was cut."""
    heads = [_fields(s) for s in steps if s.get("type") != "final"]
    lines, _ = _render(heads, None)
    if counter("\n".join(lines)) <= max_tokens:
        return "\n".join(lines)
    cap = 2000
    while cap >= 80:
        lines, cut = _render(heads, cap)
        if counter("\n".join(lines)) <= max_tokens:
            return f"(long fields shortened: {cut} characters cut)\n" + "\n".join(lines)
        cap //= 2
    lines, cut = _render(heads, 80)
    keep_head, keep_tail = 2, 4
    while keep_tail > 0:
        shown = lines_for(heads, keep_head, keep_tail)
        if counter("\n".join(shown)) <= max_tokens:
            break
        keep_tail -= 1
    dropped = max(0, len(heads) - keep_head - keep_tail)
    note = f"(long fields shortened to 80 characters; {dropped} of {len(heads)} steps cut)"
    return note + "\n" + "\n".join(lines_for(heads, keep_head, keep_tail))


def lines_for(
    heads: list[tuple[str, list[tuple[str, str]]]], keep_head: int, keep_tail: int
) -> list[str]:
    """First ``keep_head`` and last ``keep_tail`` steps (fields at 80 chars), middle cut."""
    if len(heads) <= keep_head + keep_tail:
        return _render(heads, 80)[0]
    first, _ = _render(heads[:keep_head], 80)
    last, _ = _render(heads[len(heads) - keep_tail :], 80, len(heads) - keep_tail)
    skipped = len(heads) - keep_head - keep_tail
    return [*first, f"[…{skipped} steps cut…]", *last]


__all__ = ["transcript_view"]
