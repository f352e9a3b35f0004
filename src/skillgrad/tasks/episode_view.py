"""How an environment episode shows itself: to the optimizer, in a retry, as a worked example.

``EpisodeView`` is the episode kind's ``TrajectoryView`` (``tasks/views.py``): the optimizer reads
``episode_view`` (``tasks/episode.py``); a worked example shows the task and the commands — a
passing episode's own (without its detours when the rollout replayed a shorter path that still
solves: its ``EnvShort`` step), a failed TRAIN episode's gold sequence (its reference, kept for
train episodes only) — with what the environment said before each command when that fits the budget
(for a failed episode, the answers to its gold sequence replayed: its ``EnvGold`` step).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skillgrad.prompts import render_prompt
from skillgrad.skill.text import FUNCTION_WORDS, cut, sentences, words
from skillgrad.tasks.episode import (
    MAX_DEMO_ACTIONS,
    Ending,
    EnvGold,
    EnvReset,
    EnvStep,
    Vocabulary,
    episode_ending,
    episode_steps,
    episode_view,
    is_episode,
    short_path,
)
from skillgrad.types import Trajectory

OBSERVATION_CHARS = 160  # an observation shown in a demonstration, at most
_MIN_HEAD = 24


def _user_input(t: Trajectory) -> str:
    return next((m.content for m in t.messages if m.role == "user"), "")


def _object_words(action: str) -> list[str]:
    """The words a command acts on: after its verb, three letters or more ("put 2 pineapples
    in box" -> pineapples, box; "move west" -> west)."""
    return [w for w in words(action)[1:] if len(w) >= 3]


def shown_observation(obs: str, action: str, limit: int = OBSERVATION_CHARS) -> str:
    """An observation as a demonstration shows it before ``action``: whole when it fits
    ``limit``, else its start cut at a word — and when a word the command acts on is named only
    past the cut, the start cut shorter and the first sentence that names it, so the example
    shows why the command was typed (measured on Coin Collector: a room described up to its
    exits hid "To the West you see the pantry." before `move west`, and the target copied
    `move west` into rooms without a west exit). Nothing changes when the start names them all
    or no sentence does."""
    flat = " ".join(obs.split())
    head = cut(flat, limit)
    if len(flat) <= limit:
        return head
    shown = set(words(head))
    missing = {w for w in _object_words(action) if w not in shown}
    sentence = next((x for x in sentences(flat) if missing & set(words(x))), "")
    room = limit - len(sentence) - 1
    if not sentence or room < _MIN_HEAD:
        return head
    return f"{cut(flat, room)} {sentence}"


def _episode_task(t: Trajectory) -> str:
    first = next((s for s in episode_steps(t.steps) if isinstance(s, EnvReset)), EnvReset())
    return str(first.task or first.observation or _user_input(t))


def render_episode(t: Trajectory, reply: str, limit: int) -> str:
    """An environment episode (``tasks/environment.py``): the task (or the first observation,
    cut to ``limit``), then the commands one per line, exactly as the environment takes them."""
    actions = [a.strip() for a in reply.split("\n") if a.strip()]
    return "\n".join([f"Task: {cut(_episode_task(t), limit)}", *(f"Action: {a}" for a in actions)])


def episode_observations(t: Trajectory, n_actions: int) -> list[str] | None:
    """What the environment showed before each of the demonstration's ``n_actions`` commands:
    the reset observation, then the answer to each command before the next — the episode's own
    (a passing episode) or those of its gold sequence replayed (``EnvGold``, a failed train
    episode). None when they are not recorded or do not line up with the commands."""
    records = episode_steps(t.steps)
    reset = next((s for s in records if isinstance(s, EnvReset)), None)
    if reset is None:
        return None
    if t.score.passed:
        short = short_path(records)
        after = (
            short[1] if short else [str(s.observation) for s in records if isinstance(s, EnvStep)]
        )
    else:
        gold = next((s for s in records if isinstance(s, EnvGold)), None)
        found = gold.observations if gold else None
        if not isinstance(found, list):
            return None
        after = [str(o) for o in found]
    if len(after) != n_actions:
        return None
    return [str(reset.observation), *after[:-1]]


def render_observed_episode(t: Trajectory, reply: str, limit: int) -> str:
    """An environment episode with what the environment said before each command: the task
    (cut to ``limit``), then pairs of ``Observation:`` and ``Action:``. An observation is one
    line of at most ``OBSERVATION_CHARS`` (``shown_observation``: longer ones are cut, so an
    episode of long observations does not fit the example budget and its commands alone are
    shown: ``render_episode``, the view's shorter rendering). Plain ``render_episode`` when the
    observations are not recorded."""
    actions = [a.strip() for a in reply.split("\n") if a.strip()]
    seen = episode_observations(t, len(actions))
    if seen is None:
        return render_episode(t, reply, limit)
    lines = [f"Task: {cut(_episode_task(t), limit)}"]
    for obs, action in zip(seen, actions, strict=True):
        lines += [f"Observation: {shown_observation(obs, action)}", f"Action: {action}"]
    return "\n".join(lines)


def episode_actions(t: Trajectory) -> str | None:
    """The commands a demonstration of episode ``t`` shows, one per line: a passing episode's
    own actions; a failed TRAIN episode's gold sequence (the environment's reference, kept for
    train episodes only); None when neither exists or the sequence is too long."""
    records = episode_steps(t.steps)
    if t.score.passed:
        short = short_path(records)
        actions = short[0] if short else [str(s.action) for s in records if isinstance(s, EnvStep)]
    elif isinstance(t.reference, list) and all(isinstance(a, str) for a in t.reference):
        actions = list(t.reference)
    else:
        return None
    actions = [" ".join(a.split()) for a in actions if a.strip()]
    if not actions or len(actions) > MAX_DEMO_ACTIONS:
        return None
    return "\n".join(actions)


class EpisodeView:
    """The environment episode's ``TrajectoryView``: a trajectory with an ``EnvReset`` step."""

    kind = "episode"
    examples = (render_observed_episode, render_episode)
    """Its own demonstration first; the commands alone when that does not fit the budget."""
    contrast_prompt = "contrast_episodes"
    """A passing episode is a procedure: its commands in order, written in words."""

    def claims(self, steps: Sequence[Any]) -> bool:
        return is_episode(steps)

    def for_optimizer(
        self, t: Trajectory, generic: str, feedback: str, show_reference: bool, limit: int
    ) -> str:
        """The episode's own block in the optimizer's prompt (``prompts/trajectory_episode.md``;
        ``episode_view`` bounds its fields itself)."""
        return render_prompt(
            "trajectory_episode",
            item_id=t.item_id,
            score=f"{t.score.value:.2f}",
            status="PASS" if t.score.passed else "FAIL",
            episode=episode_view(
                t.steps, t.reference, feedback, t.score.passed, show_reference=show_reference
            ),
        )

    def for_retry(self, t: Trajectory, generic: str, feedback: str) -> str:
        """A failed attempt as a retry shows it: the compact view without the gold sequence."""
        return episode_view(t.steps, None, feedback, passed=False)

    def example_reply(self, t: Trajectory, generic: str | None) -> str | None:
        """The episode's commands (``episode_actions``), never a reply or a reference."""
        return episode_actions(t)

    def ending(self, t: Trajectory, passed: bool) -> Ending:
        return episode_ending(t.steps, passed, t.infra_error is not None)

    def vocabulary(self, t: Trajectory) -> Vocabulary | None:
        """The words of the episode's task and observations, the commands the environment
        accepted and the words they act on (a refused command, "Move to the next room", names
        nothing of the episode)."""
        records = episode_steps(t.steps)
        start = next((r for r in records if isinstance(r, EnvReset)), None)
        if start is None:
            return None
        played = [r for r in records if isinstance(r, EnvStep)]
        seen = " ".join([start.task, start.observation, *(s.observation for s in played)])
        typed = tuple(" ".join(s.action.split()) for s in played if s.action)
        commands = tuple(" ".join(s.action.split()) for s in played if s.valid and s.action)
        acted = frozenset(w for c in commands for w in _object_words(c)) - FUNCTION_WORDS
        return Vocabulary(frozenset(words(seen)), commands, acted, typed)


__all__ = [
    "OBSERVATION_CHARS",
    "EpisodeView",
    "episode_actions",
    "episode_observations",
    "render_episode",
    "render_observed_episode",
    "shown_observation",
]
