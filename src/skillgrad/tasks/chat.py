"""``ChatTask``: the single-turn chat rollout most tasks use (define ``load_split``,
``prompt(item)`` and ``score(output, item)``)."""

from __future__ import annotations

from skillgrad.errors import SystemicError
from skillgrad.models.base import ModelBackend
from skillgrad.tasks.base import (
    DEFAULT_MAX_TOKENS,
    SingleTurnTask,
    scorer_failure,
)
from skillgrad.types import Item, Score, Trajectory


class ChatTask(SingleTurnTask):
    """Single-turn tasks: define ``load_split``, ``prompt(item)`` and ``score(output, item)``."""

    name = "chat"
    max_tokens = DEFAULT_MAX_TOKENS
    temperature = 0.0
    deterministic = True

    def score(self, output: str, item: Item) -> Score:
        raise NotImplementedError

    async def ascore(self, output: str, item: Item) -> Score:
        """``score`` awaited by ``rollout``; tasks whose scoring awaits (an LLM judge, sandboxed
        tests) override this instead."""
        return self.score(output, item)

    def bind_judge(self, backend: ModelBackend) -> None:
        """Receive the model that grades outputs: a no-op unless the task's scorer calls one."""
        return None

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        reply = await self.target_reply(item, skill, backend)
        if isinstance(reply, Trajectory):  # the call failed: the item's failed trajectory
            return reply
        error = None
        try:
            score = await self.ascore(reply.text, item)
        except SystemicError:
            raise  # e.g. a judge without a model, or out of budget: the run stops, not one item
        except Exception as exc:  # the reply broke the scorer: this item's verdict, not a crash
            score, error = scorer_failure(exc)
        return reply.trajectory(item, skill, score, error)


__all__ = ["ChatTask"]
