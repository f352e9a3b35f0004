"""The views of trajectory kinds: how a trajectory shows itself, so ``train/`` never sniffs one.

``train/`` renders every trajectory generically (input, reply, feedback) and hands that to the
view of its kind, which returns what is shown: the generic rendering as it is (a chat:
``ReplyView``), with the kind's additions (an agent's transcript), or the kind's own (an
environment episode). A kind's view sits beside its task module and is listed in ``VIEWS``;
``view_of`` finds the first that claims a trajectory's steps, else the generic one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from skillgrad.tasks.episode import Ending, Vocabulary
from skillgrad.tasks.episode_view import EpisodeView
from skillgrad.tasks.harness_view import AgentView
from skillgrad.tasks.reply_view import ExampleRenderer, ReplyView
from skillgrad.tasks.tools_view import ActionsView
from skillgrad.types import Trajectory


class TrajectoryView(Protocol):
    """How one trajectory kind renders itself for the optimizer, a retry and a worked example.
    Each rendering is given what the generic view shows (``generic``) and returns what the kind
    shows: that, that with more after it, or its own."""

    @property
    def kind(self) -> str:
        """The kind's name (``train/examples.trajectory_kind``)."""
        ...

    @property
    def examples(self) -> tuple[ExampleRenderer, ...]:
        """Its demonstration renderings, the preferred first, shorter ones after (tried in
        order until one fits the example budget)."""
        ...

    @property
    def contrast_prompt(self) -> str:
        """The prompt saying what to compare between a failed and a passing attempt of this
        kind (``prompts/<name>.md``, the contrast call's ``$compare``: ``train/contrast.py``)."""
        ...

    def claims(self, steps: Sequence[Any]) -> bool:
        """Whether a trajectory with these steps is of this kind."""
        ...

    def for_optimizer(
        self, t: Trajectory, generic: str, feedback: str, show_reference: bool, limit: int
    ) -> str:
        """The trajectory's block in the optimizer's prompt; ``generic`` is input, gold, reply,
        feedback and error (``prompts/trajectory.md``) with fields cut to ``limit`` characters,
        ``feedback`` the score's feedback (both already withheld without ``show_reference``)."""
        ...

    def for_retry(self, t: Trajectory, generic: str, feedback: str) -> str:
        """A failed attempt as a retry shows it, never with its reference; ``generic`` is the
        input, reply and feedback (``prompts/explore_attempt.md``)."""
        ...

    def example_reply(self, t: Trajectory, generic: str | None) -> str | None:
        """What a demonstration of ``t`` shows as the reply, None when it gives none;
        ``generic`` is a passing reply or a reference the task's scorer passes."""
        ...

    def ending(self, t: Trajectory, passed: bool) -> Ending:
        """How ``t`` ended (``passed``: its score passed and it ended on the target's own
        replies): a key of ``tasks.episode.ENDS`` (a kind without ends of its own: solved,
        unsolved or error), and whether it fell below a score it had reached."""
        ...

    def vocabulary(self, t: Trajectory) -> Vocabulary | None:
        """What ``t`` names and does (``tasks/episode.Vocabulary``); None for a kind without
        commands of its own (read by the line screen's episode objects and the command forms,
        ``train/screens/specific.py``, ``train/command_forms.py``)."""
        ...


REPLY = ReplyView()
"""The generic view: what a trajectory no view in ``VIEWS`` claims shows."""
ACTIONS = ActionsView()

VIEWS: tuple[TrajectoryView, ...] = (
    EpisodeView(),
    AgentView(ACTIONS),
    ACTIONS,
    AgentView(REPLY),
)
"""The kinds' views, asked in order (an episode before an action trajectory: an environment
step has an action too; an agent's rollout before the view of its steps)."""


def view_of(t: Trajectory) -> TrajectoryView:
    """The view of ``t``'s kind: the first in ``VIEWS`` that claims its steps, else ``REPLY``."""
    return next((v for v in VIEWS if v.claims(t.steps)), REPLY)


__all__ = ["REPLY", "VIEWS", "ExampleRenderer", "TrajectoryView", "view_of"]
