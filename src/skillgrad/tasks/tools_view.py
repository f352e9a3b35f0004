"""How a multi-turn trajectory shows itself: its demonstration lists its actions in order.

``ActionsView`` is the ``TrajectoryView`` of a trajectory with tool-call steps (``ToolTask``,
``tasks/tools.py``, and an agent's calls in the same shape) or action steps; the optimizer and a
retry see it as the generic view (``tasks/reply_view.py``) does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skillgrad.skill.text import cut
from skillgrad.tasks.reply_view import ExampleRenderer, ReplyView, shown_reply, user_input
from skillgrad.types import Trajectory

TOOL_CALL = "tool_call"  # the step type ToolTask (and an agent's transcript) writes per call


def _is_action(step: Any) -> bool:
    return step.get("type") == TOOL_CALL or "action" in step


def render_actions(t: Trajectory, reply: str, limit: int) -> str:
    """A multi-turn demonstration: the task's input, then each action in order (tool calls with
    their arguments, environment commands), then the final reply if there is one."""
    lines = [f"Input: {cut(user_input(t), limit)}"]
    for s in t.steps:
        if s.get("type") == TOOL_CALL:
            lines.append(f"Call: {s.get('tool', '')}({cut(str(s.get('arguments', '')), 120)})")
        elif "action" in s:
            lines.append(f"Action: {cut(str(s['action']), 120)}")
    if reply.strip():
        lines.append(shown_reply(reply))
    return "\n".join(lines)


class ActionsView(ReplyView):
    """A trajectory with a tool-call or an action step."""

    kind = "actions"
    examples: tuple[ExampleRenderer, ...] = (render_actions,)

    def claims(self, steps: Sequence[Any]) -> bool:
        return any(_is_action(s) for s in steps)


__all__ = ["ActionsView", "render_actions"]
