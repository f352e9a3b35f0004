"""Where a later exploration attempt starts, and what it does not repeat
(``train.explore_resume``; the attempts themselves: ``train/explore.py``).

Go-Explore's "return, then explore", on the target's own commands. ``resume_point``: the
commands a later attempt replays to return to the highest score an earlier failed attempt
reached (its ``peak``, first reached; a lost game can fall back to 0 after it), by the route an
environment recorded there without detours and refused commands (``env_route``), else as
played. ``ResumeBackend`` answers those turns without a model call. ``known_losses``: the
commands after which an earlier attempt's score fell, keyed by the commands before them;
``RedrawBackend`` draws a reply that repeats one of them again, hotter, a bounded number of
times. Every command of a pass is still the target's own.

Measured on Pecking Order (gold off, the 1.5B; docs/results.md): resumed attempts that replayed
17 commands as played ran out of the target's context window 2–3 turns later; 3 of 5 attempts at
one episode took the same wrong item right after the same two commands, and two more draws at
the attempt's own temperature gave it again. With the route, the redraws and hotter redraws,
step-1 exploration of two splits that had found nothing solved 3 of 8 failed episodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from skillgrad.models.base import ModelBackend
from skillgrad.tasks.episode import env_steps, episode_steps, peak_route, score_falls
from skillgrad.train.rollout import SampledBackend
from skillgrad.types import ChatRequest, Completion, Trajectory

REDRAWS = 4  # an attempt's draws past a command known to lose points


def peak(t: Trajectory) -> float:
    """The highest score an episode reached at any step (a game that is lost can fall back to
    0 after it: measured on Pecking Order, every resumed attempt ended at 0.00)."""
    return max((s.progress for s in env_steps(t.steps) if s.progress is not None), default=0.0)


def progress_commands(t: Trajectory) -> list[str]:
    """An episode's commands up to the first step where it reached its peak score; [] when
    the score never rose above 0 (or ``t`` is not an episode)."""
    played, top = env_steps(t.steps), peak(t)
    if top <= 0:
        return []
    first = next(i for i, s in enumerate(played) if s.progress == top)
    return [s.action for s in played[: first + 1]]


def up_to_peak(t: Trajectory) -> Trajectory:
    """``t`` with its steps cut after the one where its score first reached its peak (what an
    attempt that later lost the game did right: ``progress_commands``); ``t`` itself when its
    score never rose."""
    n = len(progress_commands(t))
    if n == 0:
        return t
    played = 0
    for cut, s in enumerate(t.steps):
        played += len(env_steps([s]))
        if played == n:
            return dataclasses.replace(t, steps=tuple(t.steps[: cut + 1]))
    return t


def resume_point(failed: Sequence[Trajectory]) -> list[str]:
    """The commands a resumed attempt replays to return to the highest peak any failed attempt
    reached (the latest of equals): that attempt's recorded route there without its detours
    and refused commands (``env_route``, checked by replay when it was recorded), else its
    commands up to that peak; [] when none made progress."""
    top = max((peak(t) for t in failed), default=0.0)
    if top <= 0:
        return []
    best = [t for t in failed if peak(t) == top][-1]
    return peak_route(episode_steps(best.steps)) or progress_commands(best)


def command_key(text: object) -> str:
    """A command as ``known_losses`` compares it: case, spacing, quotes and a final period
    aside (a cache is read as stored: a command that is no text is compared as its text)."""
    return " ".join(str(text).split()).strip("`'\".").casefold()


def known_losses(failed: Sequence[Trajectory]) -> dict[tuple[str, ...], set[str]]:
    """Per sequence of commands played from the reset (``command_key``), the commands that
    earlier failed attempts lost points with right after it (``score_falls``): the same
    commands from the same reset reach the same state, so the same command there loses again.
    A loss right after an attempt's peak is also keyed by its recorded route there
    (``env_route``), which is what an attempt resumed from it replays."""
    out: dict[tuple[str, ...], set[str]] = {}
    for f in failed:
        played = env_steps(f.steps)
        acts = [command_key(s.action) for s in played]
        route = peak_route(episode_steps(f.steps))
        at_peak = len(progress_commands(f))
        for i in score_falls(played):
            out.setdefault(tuple(acts[:i]), set()).add(acts[i])
            if route and i == at_peak:
                out.setdefault(tuple(command_key(a) for a in route), set()).add(acts[i])
    return out


class RedrawBackend:
    """The sampled target, except that a reply repeating a command an earlier attempt lost
    points with after the same commands (``known_losses``) is drawn again with the next
    seed and ``hotter`` more temperature each time (up to ``ceiling``), at most
    ``REDRAWS`` times in the attempt; the last draw stands (a pass is still the target's own
    reply). ``redrawn`` counts the draws made again. Measured on Pecking Order: at the attempt's
    own temperature, two more draws gave the 1.5B's same losing command again."""

    def __init__(
        self,
        inner: SampledBackend,
        losses: dict[tuple[str, ...], set[str]],
        hotter: float,
        ceiling: float,
        draws: int = REDRAWS,
    ) -> None:
        self.inner, self.losses, self.hotter, self.ceiling = inner, losses, hotter, ceiling
        self.draws, self.redrawn = draws, 0
        self.name = inner.name

    def __getattr__(self, attr: str) -> object:  # count_tokens, ... of the real backend
        return getattr(self.inner, attr)

    async def complete(self, request: ChatRequest) -> Completion:
        done = tuple(command_key(m.content) for m in request.messages if m.role == "assistant")
        avoid = self.losses.get(done, set())
        out = await self.inner.complete(request)
        while command_key(out.text) in avoid and self.redrawn < self.draws:
            self.redrawn += 1
            base = self.inner.temperature or request.temperature
            hot = min(self.ceiling, base + self.hotter * self.redrawn)
            out = await self.inner.reseeded(self.redrawn, hot).complete(request)
        return out


class ResumeBackend:
    """The target, except that an episode's first ``len(prefix)`` turns are answered with
    ``prefix`` (no model call, no tokens): the attempt resumes from the state they reach.
    The turn is the number of assistant messages the request already holds."""

    def __init__(self, inner: ModelBackend, prefix: Sequence[str]) -> None:
        self.inner, self.prefix = inner, list(prefix)
        self.name = getattr(inner, "name", type(inner).__name__)

    def __getattr__(self, attr: str) -> object:  # count_tokens, ... of the real backend
        return getattr(self.inner, attr)

    async def complete(self, request: ChatRequest) -> Completion:
        turn = sum(m.role == "assistant" for m in request.messages)
        if turn < len(self.prefix):
            return Completion(text=self.prefix[turn], model="replayed")
        return await self.inner.complete(request)


__all__ = [
    "REDRAWS",
    "RedrawBackend",
    "ResumeBackend",
    "command_key",
    "known_losses",
    "peak",
    "progress_commands",
    "resume_point",
    "up_to_peak",
]
