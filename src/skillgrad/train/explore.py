"""Explore (``train.explore: on``): the target tries the step's failed TRAIN items again.

Each failed train item of the batch gets up to ``train.explore_attempts`` attempts, stopping at the
first pass, with what a trainer may use at train time and never at val/test: its own sampling seed
per attempt at ``train.explore_temperature`` (past the call cache), the task's exploration variant
(``Task.exploration_task``: an environment lists its valid actions each turn), and from the second
attempt on a Reflexion-style retry that sees its earlier failed attempts (the ``RETRY_SHOWN`` most
recent distinct ones) and the scorer's feedback (``prompts/explore_retry.md``, appended to the
system prompt of that attempt only; it never enters the skill). An attempt that repeats an earlier
failed one exactly (``same_attempt``) raises the temperature of the attempts after it by
``train.explore_temperature_step``: measured on Pecking Order with 4 attempts, 11 of one run's 24
retries repeated an earlier attempt command for command, and that run found nothing to learn from.
With ``train.explore_resume`` on (``train/revisit.py``), an attempt after one that made progress
without passing starts where the highest score any earlier attempt reached was first reached (its
commands, or the environment's shorter route there, replayed without a model call), and a reply
that repeats a command an earlier attempt lost points with after the same commands is drawn again,
hotter. A passing attempt is offered as a worked example (``train/examples.py``) and shown to the
optimizer beside the failed one (``train/contrast.py``). Attempts are cached like rollouts: a
resumed run pays nothing again.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillgrad.models.base import ModelBackend
from skillgrad.prompts import render_prompt
from skillgrad.skill.package import is_package_text
from skillgrad.tasks.base import task_abilities
from skillgrad.tasks.episode import Ending
from skillgrad.tasks.views import view_of
from skillgrad.train.context import RunContext
from skillgrad.train.revisit import (
    RedrawBackend,
    ResumeBackend,
    known_losses,
    peak,
    resume_point,
)
from skillgrad.train.rollout import SampledBackend, rollout_item
from skillgrad.train.state import TrainState
from skillgrad.types import Item, Trajectory, to_json

VIEW_CHARS = 500  # the input, reply and feedback of a chat attempt as the retry shows them
RETRY_SHOWN = 3  # the most recent distinct failed attempts a retry shows
MAX_TEMPERATURE = 2.0  # the bound of train.explore_temperature: a hotter repeat stops there
EARNED = 2  # with train.explore_resume, attempts that raised the peak extend the budget to this


def attempt_id(item_id: str, step: int, attempt: int) -> str:
    """The result-cache id of exploration attempt ``attempt`` (1-based) of ``step``."""
    return f"{item_id}#x{step}.{attempt}"


def exploration_seed(train_seed: int, step: int, item_id: str, attempt: int) -> int:
    """The sampling seed of one attempt: a stable 31-bit hash of the run's seed, the step, the
    item and the attempt (a resumed run draws the same attempts)."""
    key = f"skillgrad-explore:{train_seed}:{step}:{item_id}:{attempt}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


@dataclass(frozen=True)
class Attempt:
    """One exploration attempt at a train item (its trajectory carries the item's own id)."""

    item_id: str
    number: int
    cache_id: str
    trajectory: Trajectory
    retry: bool
    repeat: bool = False
    """It repeats an earlier failed attempt at the item exactly (``same_attempt``)."""
    temperature: float | None = None
    resumed: int = 0
    """Commands replayed from an earlier attempt before the target went on
    (``train.explore_resume``); 0: played from the start."""
    redrawn: int = 0
    """Replies drawn again because they repeated a command an earlier attempt lost points
    with after the same commands (``known_losses``)."""

    @property
    def passed(self) -> bool:
        return self.trajectory.score.passed and _clean(self.trajectory)

    @property
    def ending(self) -> Ending:
        """How the attempt ended (its view's ``ending``: solved, out of steps, …)."""
        return view_of(self.trajectory).ending(self.trajectory, self.passed)

    def to_json(self) -> dict[str, Any]:
        """One row of the step's ``exploration.jsonl``."""
        t = self.trajectory
        row = {"item_id": self.item_id, "attempt": self.number, "cache_id": self.cache_id}
        row |= {"retry": self.retry, "repeat": self.repeat, "temperature": self.temperature}
        row |= {"resumed": self.resumed, "redrawn": self.redrawn}
        row |= {"passed": self.passed, "score": t.score.value}
        row |= {"end": self.ending.end, "fell": self.ending.fell}
        return {**row, "feedback": t.score.feedback, "trajectory": to_json(t)}


@dataclass(frozen=True)
class Exploration:
    """A step's exploration: every attempt, in item order then attempt order."""

    attempts: tuple[Attempt, ...] = ()

    @property
    def found(self) -> list[Attempt]:
        """The passing attempts (at most one per item: exploration stops at the first pass)."""
        return [a for a in self.attempts if a.passed]

    def pairs(self, trajs: Sequence[Trajectory]) -> list[tuple[Trajectory, Attempt]]:
        """(the nearest failure, the passing attempt) per item exploration solved: the failed
        attempt the passing retry saw and corrected (the attempt before it: under the same
        exploration affordances, so what differs is the target's own choice), else the batch's
        failed trajectory (the first attempt passed)."""
        failed = {t.item_id: t for t in trajs if not t.score.passed}
        before = {(a.item_id, a.number): a.trajectory for a in self.attempts if not a.passed}
        return [
            (before.get((a.item_id, a.number - 1), failed[a.item_id]), a)
            for a in self.found
            if a.item_id in failed
        ]

    def improved(self, trajs: Sequence[Trajectory]) -> list[tuple[Trajectory, Attempt]]:
        """(a lower-scoring attempt, the best attempt) per failed item no attempt solved but
        one scored higher than the item's failure (``train.contrast_partial``: a graded scorer's
        partial progress, measured on Pecking Order gold off: every seed whose exploration
        solved nothing had attempts scoring 0.25-0.75 beside failures at 0). The lower side is
        the nearest attempt before the best one that scored less (the one its retry saw), else
        the batch's failure. Largest improvement first."""
        failed = {t.item_id: t for t in trajs if not t.score.passed and t.infra_error is None}
        solved = {a.item_id for a in self.found}
        out: list[tuple[float, Trajectory, Attempt]] = []
        for item_id, first in failed.items():
            tried = [a for a in self.attempts if a.item_id == item_id and _clean(a.trajectory)]
            if item_id in solved or not tried:
                continue
            best = max(tried, key=lambda a: (a.trajectory.score.value, -a.number))
            top = best.trajectory.score.value
            before = [first, *(a.trajectory for a in tried if a.number < best.number)]
            lower = [t for t in before if t.score.value < top]
            if lower:
                out.append((top - lower[-1].score.value, lower[-1], best))
        out.sort(key=lambda x: -x[0])
        return [(low, best) for _, low, best in out]

    def counts(self) -> tuple[int, int, int]:
        """(items explored, attempts, items solved)."""
        items = {a.item_id for a in self.attempts}
        return len(items), len(self.attempts), len(self.found)

    @property
    def repeats(self) -> int:
        """Attempts that repeated an earlier failed attempt at their item exactly."""
        return sum(a.repeat for a in self.attempts)

    @property
    def resumed(self) -> int:
        """Attempts that replayed an earlier attempt's commands first (``train.explore_resume``)."""
        return sum(a.resumed > 0 for a in self.attempts)

    @property
    def redrawn(self) -> int:
        """Replies drawn again past a command known to lose points (``RedrawBackend``)."""
        return sum(a.redrawn for a in self.attempts)

    def ends(self) -> dict[str, int]:
        """How many attempts ended each way (``Attempt.ending``), most frequent first."""
        return dict(Counter(a.ending.end for a in self.attempts).most_common())

    @property
    def fell(self) -> int:
        """Unsolved attempts that ended below a score they had reached."""
        return sum(a.ending.fell for a in self.attempts)


def _clean(t: Trajectory) -> bool:
    """The attempt ended on the target's own replies: no error, no infrastructure failure."""
    return t.error is None and t.infra_error is None


def explorable(ctx: RunContext, trajs: Sequence[Trajectory]) -> list[Item]:
    """The train items of the batch that failed on their own reply (an infrastructure failure
    says nothing about the skill). Exploring a val or test item would train on held-out data:
    a trajectory of an item outside the train split is a bug and raises."""
    train = {i.id: i for i in ctx.items["train"]}
    held_out = {i.id for s in ("val", "test") for i in ctx.items.get(s, [])}
    out = []
    for t in trajs:
        item = train.get(t.item_id)
        if item is None or t.item_id in held_out or item.meta.get("split", "train") != "train":
            raise ValueError(f"exploration is for train items only; got {t.item_id!r}")
        if not t.score.passed and t.infra_error is None:
            out.append(item)
    return out


async def explore(
    ctx: RunContext, state: TrainState, step: int, trajs: Sequence[Trajectory]
) -> Exploration:
    """Explore every failed train item of the step's batch, ``rollout_workers`` at a time."""
    items = explorable(ctx, trajs)
    limit = asyncio.Semaphore(ctx.cfg.hardware.rollout_workers)
    ctx.progress.start("explore", len(items))

    async def one(item: Item) -> list[Attempt]:
        async with limit:
            found = await explore_item(ctx, state.skill, step, item)
        ctx.progress.advance("explore", info="found" if found[-1].passed else "-")
        return found

    try:
        per_item = await asyncio.gather(*(one(i) for i in items))
    finally:
        ctx.progress.finish("explore")
    out = Exploration(tuple(a for attempts in per_item for a in attempts))
    n_items, n_attempts, n_found = out.counts()
    ctx.emit(
        "explore", step=step, items=n_items, attempts=n_attempts, found=n_found,
        repeats=out.repeats, resumed=out.resumed, redrawn=out.redrawn, ends=out.ends(),
        fell=out.fell,
    )  # fmt: skip
    return out


async def explore_item(ctx: RunContext, skill: str, step: int, item: Item) -> list[Attempt]:
    """Up to ``train.explore_attempts`` attempts at ``item``, stopping at the first pass or an
    infrastructure failure; from the second on, each sees the failed ones before it
    (``retry_skill``), and each exact repeat of a failed attempt samples the next ones wider.
    With ``train.explore_resume`` on, an attempt that raises the item's highest score so far
    earns one more attempt, resumed from there, up to ``EARNED`` times the budget (measured on
    Map Reader with 2 attempts: second attempts that took the coin, 0.5, were never resumed
    from, so the walk back to the box was never tried from there), and replies that repeat a
    known loss are drawn again (``train/revisit.py``)."""
    t = ctx.cfg.train
    resume = t.explore_resume == "on"
    attempts: list[Attempt] = []
    failed: list[Trajectory] = []
    budget, number, best = t.explore_attempts, 0, 0.0
    while number < budget:
        number += 1
        shown = skill if not failed else retry_skill(skill, failed, t.show_reference)
        repeats = sum(a.repeat for a in attempts)
        temperature = min(
            MAX_TEMPERATURE, t.explore_temperature + t.explore_temperature_step * repeats
        )
        seed = exploration_seed(t.seed, step, item.id, number)
        sampled = SampledBackend(ctx.target, seed, temperature)
        backend: ModelBackend = sampled
        redraws = None
        if resume:  # past a known loss, hotter
            hotter, losses = t.explore_temperature_step, known_losses(failed)
            backend = redraws = RedrawBackend(sampled, losses, hotter, MAX_TEMPERATURE)
        prefix = resume_point(failed) if resume else []
        if prefix:
            backend = ResumeBackend(backend, prefix)
        task = task_abilities(ctx.task).exploration_task(ctx.task, len(prefix), routes=resume)
        cache_id = attempt_id(item.id, step, number)
        traj = await rollout_item(task, item, shown, backend, store=ctx.store, cache_id=cache_id)
        repeat = any(same_attempt(traj, f) for f in failed)
        attempts.append(
            Attempt(
                item.id, number, cache_id, traj, shown != skill, repeat, temperature, len(prefix),
                redraws.redrawn if redraws is not None else 0,
            )
        )  # fmt: skip
        if attempts[-1].passed or traj.infra_error is not None:
            break
        failed.append(traj)
        if resume and (reached := peak(traj)) > best:
            best, budget = reached, min(budget + 1, EARNED * t.explore_attempts)
    return attempts


def same_attempt(a: Trajectory, b: Trajectory) -> bool:
    """Two attempts at one item did the same: the same reply (an episode's: its commands, in
    order), up to case and spacing."""
    return " ".join(a.output.split()).casefold() == " ".join(b.output.split()).casefold()


def distinct_failures(failed: Sequence[Trajectory]) -> list[tuple[Trajectory, int]]:
    """The ``RETRY_SHOWN`` most recent distinct failed attempts, oldest first, each with how
    many times it was made."""
    out: list[tuple[Trajectory, int]] = []
    for t in failed:
        same = next((i for i, (seen, _) in enumerate(out) if same_attempt(t, seen)), None)
        if same is None:
            out.append((t, 1))
        else:
            out.append((t, out.pop(same)[1] + 1))
    return out[-RETRY_SHOWN:]


def retry_skill(skill: str, failed: Sequence[Trajectory], show_reference: bool) -> str:
    """The system prompt of a retry: the skill, then the earlier failed attempts and their
    feedback (``prompts/explore_retry.md``; several: ``prompts/explore_retries.md``). A skill
    package is sampled again as it is (its rendering is the package's own)."""
    if is_package_text(skill):
        return skill
    shown = distinct_failures(failed)
    if len(shown) == 1 and shown[0][1] == 1:
        section = render_prompt("explore_retry", attempt=attempt_view(shown[0][0], show_reference))
    else:
        blocks = [
            render_prompt(
                "explore_retries_attempt",
                number=n,
                times="" if times == 1 else f" (made {times} times, the same way each time)",
                attempt=attempt_view(t, show_reference),
            )
            for n, (t, times) in enumerate(shown, 1)
        ]
        section = render_prompt("explore_retries", attempts="\n".join(blocks).rstrip())
    return f"{skill.rstrip()}{section}" if skill.strip() else section.lstrip("\n")


def attempt_view(t: Trajectory, show_reference: bool) -> str:
    """A failed attempt as the retry shows it: the input, the reply and the feedback, as its
    kind's view shows them (``view_of``: an episode's compact view, with the commands the
    environment accepted where it went wrong, never the gold sequence). The reference is never
    shown; with ``train.show_reference`` off it is cut from the feedback too."""
    feedback = t.score.feedback
    gold = "" if t.reference is None else str(t.reference)
    if not show_reference and gold.strip():
        feedback = feedback.replace(gold, "(withheld)")
    user = next((m.content for m in reversed(t.messages) if m.role == "user"), "")
    generic = render_prompt(
        "explore_attempt",
        input=user[:VIEW_CHARS],
        output=repr(t.output[:VIEW_CHARS]),
        feedback=feedback[:VIEW_CHARS],
    )
    return view_of(t).for_retry(t, generic, feedback)


__all__ = [
    "Attempt",
    "Exploration",
    "attempt_id",
    "attempt_view",
    "distinct_failures",
    "explorable",
    "exploration_seed",
    "explore",
    "explore_item",
    "retry_skill",
    "same_attempt",
]
