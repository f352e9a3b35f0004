"""How an agent-harness rollout shows itself: as its steps otherwise would, plus the agent's
transcript in the optimizer's block (``harnesses/transcript.py``: token-budgeted, saying what
was cut). ``AgentView`` wraps the view of its steps (actions when the agent called tools).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skillgrad.harnesses.transcript import transcript_view
from skillgrad.prompts import render_prompt
from skillgrad.tasks.episode import Ending, Vocabulary
from skillgrad.tasks.reply_view import ExampleRenderer, ReplyView
from skillgrad.types import Trajectory

AGENT_EXIT = "agent_exit"  # the step HarnessTask (tasks/harness.py) writes when the agent ends


class AgentView:
    """An agent-harness rollout (a trajectory with an ``agent_exit`` step) whose steps ``inner``
    claims: ``inner``'s kind, demonstrations, retry view and reply; the optimizer's block is
    ``inner``'s with the transcript after it."""

    def __init__(self, inner: ReplyView) -> None:
        self.inner = inner

    @property
    def kind(self) -> str:
        return self.inner.kind

    @property
    def examples(self) -> tuple[ExampleRenderer, ...]:
        return self.inner.examples

    @property
    def contrast_prompt(self) -> str:
        return self.inner.contrast_prompt

    def claims(self, steps: Sequence[Any]) -> bool:
        return any(s.get("type") == AGENT_EXIT for s in steps) and self.inner.claims(steps)

    def for_optimizer(
        self, t: Trajectory, generic: str, feedback: str, show_reference: bool, limit: int
    ) -> str:
        block = self.inner.for_optimizer(t, generic, feedback, show_reference, limit)
        view = transcript_view(t.steps, max_tokens=limit * 2)
        return block + "\n" + render_prompt("trajectory_transcript", transcript=view)

    def for_retry(self, t: Trajectory, generic: str, feedback: str) -> str:
        return self.inner.for_retry(t, generic, feedback)

    def example_reply(self, t: Trajectory, generic: str | None) -> str | None:
        return self.inner.example_reply(t, generic)

    def ending(self, t: Trajectory, passed: bool) -> Ending:
        return self.inner.ending(t, passed)

    def vocabulary(self, t: Trajectory) -> Vocabulary | None:
        return self.inner.vocabulary(t)


__all__ = ["AGENT_EXIT", "AgentView"]
