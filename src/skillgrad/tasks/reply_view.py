"""The generic trajectory view: a task's input and one reply (a chat, or a rollout no kind claims).

``ReplyView`` shows a trajectory as ``train/`` renders it (the optimizer's block, the retry's
view, the demonstration's reply) unchanged; a demonstration is the input, then the reply exactly
(``render_reply``). Kinds that add to it build on it (``tools_view``, ``harness_view``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from skillgrad.skill.text import cut, fence_for
from skillgrad.tasks.episode import Ending, Vocabulary
from skillgrad.types import Trajectory

ExampleRenderer = Callable[[Trajectory, str, int], str]
"""(trajectory, the reply to show, max characters of the input) -> the example's text."""


def user_input(t: Trajectory) -> str:
    """The task's input: the trajectory's first user message."""
    return next((m.content for m in t.messages if m.role == "user"), "")


def shown_reply(reply: str) -> str:
    """The reply as the skill shows it: one line after "Reply: ", or a multi-line reply in a
    fence no line of it can close (``fence_for``), so a line of it can never read as a heading
    of the skill."""
    text = reply.strip()
    if "\n" not in text:
        return f"Reply: {text}"
    fence = fence_for(text)
    return f"Reply:\n{fence}\n{text}\n{fence}"


def render_reply(t: Trajectory, reply: str, limit: int) -> str:
    """The default demonstration: the task's input (cut to ``limit``), then the reply exactly."""
    return f"Input: {cut(user_input(t), limit)}\n{shown_reply(reply)}"


class ReplyView:
    """The generic ``TrajectoryView``: every trajectory shows as ``train/`` renders it."""

    kind = "reply"
    examples: tuple[ExampleRenderer, ...] = (render_reply,)
    contrast_prompt = "contrast_replies"

    def claims(self, steps: Sequence[Any]) -> bool:
        return True

    def for_optimizer(
        self, t: Trajectory, generic: str, feedback: str, show_reference: bool, limit: int
    ) -> str:
        return generic

    def for_retry(self, t: Trajectory, generic: str, feedback: str) -> str:
        return generic

    def example_reply(self, t: Trajectory, generic: str | None) -> str | None:
        return generic

    def ending(self, t: Trajectory, passed: bool) -> Ending:
        return Ending("error" if t.infra_error else "solved" if passed else "unsolved")

    def vocabulary(self, t: Trajectory) -> Vocabulary | None:
        return None


__all__ = ["ExampleRenderer", "ReplyView", "render_reply", "shown_reply", "user_input"]
