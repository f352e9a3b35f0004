"""The views of trajectory kinds: how a trajectory shows itself, so ``train/`` never sniffs one.

A rollout kind whose steps need their own rendering (an environment episode) provides a
``TrajectoryView`` beside its task module and is listed in ``VIEWS``; ``view_of`` finds the view
that claims a trajectory's steps, None for the generic one (input, reply, feedback).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from skillgrad.tasks.episode_view import EpisodeView
from skillgrad.types import Trajectory

ExampleRenderer = Callable[[Trajectory, str, int], str]
"""(trajectory, the reply to show, max characters of the input) -> the example's text."""


class TrajectoryView(Protocol):
    """How one trajectory kind renders itself for the optimizer, a retry and a worked example."""

    @property
    def kind(self) -> str:
        """The kind's name (``train/examples.trajectory_kind``)."""
        ...

    @property
    def examples(self) -> tuple[ExampleRenderer, ...]:
        """Its demonstration renderings, the preferred first, shorter ones after (tried in
        order until one fits the example budget)."""
        ...

    def claims(self, steps: Sequence[Any]) -> bool:
        """Whether a trajectory with these steps is of this kind."""
        ...

    def for_optimizer(self, t: Trajectory, feedback: str, show_reference: bool) -> str:
        """The trajectory's block in the optimizer's prompt (``feedback`` already withheld)."""
        ...

    def for_retry(self, t: Trajectory, feedback: str) -> str:
        """A failed attempt as a retry shows it, never with its reference."""
        ...

    def example_reply(self, t: Trajectory) -> str | None:
        """What a demonstration of ``t`` shows as the reply, None when it gives none."""
        ...


VIEWS: tuple[TrajectoryView, ...] = (EpisodeView(),)


def view_of(t: Trajectory) -> TrajectoryView | None:
    """The view of ``t``'s kind, or None (the generic reply view)."""
    return next((v for v in VIEWS if v.claims(t.steps)), None)


__all__ = ["VIEWS", "ExampleRenderer", "TrajectoryView", "view_of"]
