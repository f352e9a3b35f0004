"""``ChatTask``: the single-turn chat rollout most tasks use (define ``load_split``,
``prompt(item)`` and ``score(output, item)``)."""

from __future__ import annotations

from skillgrad.errors import BudgetExceeded, ConfigError, PermanentModelError
from skillgrad.models.base import ModelBackend
from skillgrad.skill.document import skill_hash
from skillgrad.tasks.base import (
    DEFAULT_MAX_TOKENS,
    complete_item,
    failed_trajectory,
    skill_messages,
)
from skillgrad.types import Item, Message, Score, Trajectory


class ChatTask:
    """Single-turn tasks: define ``load_split``, ``prompt(item)`` and ``score(output, item)``."""

    name = "chat"
    max_tokens = DEFAULT_MAX_TOKENS
    temperature = 0.0
    deterministic = True

    def prompt(self, item: Item) -> str:
        raise NotImplementedError

    def score(self, output: str, item: Item) -> Score:
        raise NotImplementedError

    async def ascore(self, output: str, item: Item) -> Score:
        """``score`` awaited by ``rollout``; tasks whose scoring awaits (an LLM judge, sandboxed
        tests) override this instead."""
        return self.score(output, item)

    def bind_judge(self, backend: ModelBackend) -> None:
        """Receive the model that grades outputs: a no-op unless the task's scorer calls one."""
        return None

    def messages(self, item: Item, skill: str) -> tuple[Message, ...]:
        return skill_messages(skill, self.prompt(item))

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        messages = self.messages(item, skill)
        completion = await complete_item(
            item, skill, messages, backend, temperature=self.temperature, max_tokens=self.max_tokens
        )
        if isinstance(completion, Trajectory):  # the call failed: the item's failed trajectory
            return completion
        output = completion.text
        try:
            score = await self.ascore(output, item)
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


__all__ = ["ChatTask"]
