"""The Task and Scorer Protocols, and ``ChatTask``: the single-turn chat rollout most tasks use.

A task loads its splits and rolls one item out with a skill (the system prompt) on a target
backend, returning a scored Trajectory. The gold reference goes to the scorer and into the
trajectory (for the optimizer); it is never put into the target's messages.
"""

from __future__ import annotations

import hashlib
from typing import Literal, Protocol, runtime_checkable

from skillgrad.errors import BudgetExceeded, ConfigError, PermanentModelError, SkillgradError
from skillgrad.models.base import ModelBackend
from skillgrad.types import ChatRequest, Completion, Item, Message, Score, Trajectory, Usage

Split = Literal["train", "val", "test"]
SPLITS: tuple[Split, ...] = ("train", "val", "test")


def skill_hash(skill_text: str) -> str:
    """Content hash of a skill document (the key of the per-(skill, item) result cache)."""
    return hashlib.sha256(skill_text.encode("utf-8")).hexdigest()[:16]


@runtime_checkable
class Scorer(Protocol):
    """Contract: ``score(output, item)`` returns a Score with ``value`` in [0, 1], ``passed``, and
    feedback text that tells the optimizer *why* (expected vs got), never only a number. It is
    deterministic unless documented otherwise, and never raises on odd output (empty, unicode,
    huge): that is a low score with feedback."""

    def score(self, output: str, item: Item) -> Score: ...


@runtime_checkable
class Task(Protocol):
    """Contract:

    - ``load_split(split)`` returns the items of ``"train"``, ``"val"`` or ``"test"`` with
      unique ids, the same list every time (seeded), or raises ``DataError`` saying which file,
      line and field is wrong. Items are never mutated afterwards.
    - ``rollout(item, skill, backend)`` runs the target with ``skill`` as its system prompt and
      returns a scored Trajectory. A failure of this one item (bad output, a transient model
      error that survived retries, a tool crash) is returned as a trajectory with ``error`` set
      and score 0 — never raised. Only systemic failures raise (``PermanentModelError``,
      ``BudgetExceeded``).
    - The item's ``reference`` never reaches the target's messages.
    """

    name: str

    def load_split(self, split: Split) -> list[Item]: ...

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory: ...


class ChatTask:
    """Single-turn tasks: define ``load_split``, ``prompt(item)`` and ``score(output, item)``."""

    name = "chat"
    max_tokens = 64
    temperature = 0.0

    def prompt(self, item: Item) -> str:
        raise NotImplementedError

    def score(self, output: str, item: Item) -> Score:
        raise NotImplementedError

    def messages(self, item: Item, skill: str) -> tuple[Message, ...]:
        return skill_messages(skill, self.prompt(item))

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        messages = self.messages(item, skill)
        request = ChatRequest(messages, temperature=self.temperature, max_tokens=self.max_tokens)
        completion = await complete_item(backend, request)
        if isinstance(completion, str):
            return failed_trajectory(item, skill, messages, completion)
        output = completion.text
        try:
            ascore = getattr(self, "ascore", None)  # async scorers (LLM judge, sandboxed tests)
            score = await ascore(output, item) if ascore else self.score(output, item)
        except (PermanentModelError, BudgetExceeded, ConfigError):
            raise  # e.g. a judge without a model, or out of budget: the run stops, not one item
        except Exception as exc:  # a scorer bug on one item must not kill the step
            return failed_trajectory(
                item, skill, messages, f"scorer raised {type(exc).__name__}: {exc}", output
            )
        return Trajectory(
            item_id=item.id,
            skill_hash=skill_hash(skill),
            messages=(*messages, Message("assistant", output)),
            output=output,
            score=score,
            reference=item.reference,
            usage=completion.usage,
        )


def skill_messages(skill: str, prompt: str) -> tuple[Message, ...]:
    """The target's view: the skill as system prompt (if any), then the item's prompt."""
    system = (Message("system", skill),) if skill.strip() else ()
    return (*system, Message("user", prompt))


async def complete_item(backend: ModelBackend, request: ChatRequest) -> Completion | str:
    """Call the target for one item. Systemic failures raise; the item's own failure (e.g. a
    transient error that outlived its retries) is returned as an error string: it is data."""
    try:
        return await backend.complete(request)
    except (PermanentModelError, BudgetExceeded):
        raise
    except SkillgradError as exc:
        return f"{type(exc).__name__}: {exc}"


def failed_trajectory(
    item: Item, skill: str, messages: tuple[Message, ...], error: str, output: str = ""
) -> Trajectory:
    return Trajectory(
        item_id=item.id,
        skill_hash=skill_hash(skill),
        messages=messages,
        output=output,
        score=Score(0.0, False, f"error: {error}"),
        reference=item.reference,
        error=error,
        usage=Usage(),
    )


__all__ = [
    "SPLITS",
    "ChatTask",
    "Scorer",
    "Split",
    "Task",
    "complete_item",
    "failed_trajectory",
    "skill_hash",
    "skill_messages",
]
