"""The Scorer Protocol and ``BaseScorer``, the base class of the built-in scorers.

A scorer turns one output into a Score with feedback that says why.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Protocol, runtime_checkable

from skillgrad.errors import ConfigError
from skillgrad.scorers.textnorm import short
from skillgrad.types import Item, Score


@runtime_checkable
class Scorer(Protocol):
    """Contract: ``score(output, item)`` returns a Score with ``value`` in [0, 1], ``passed``, and
    feedback text that tells the optimizer *why* (expected vs got), never only a number. It is
    deterministic unless documented otherwise, and never raises on odd output (empty, unicode,
    huge): that is a low score with feedback."""

    def score(self, output: str, item: Item) -> Score: ...


class BaseScorer:
    """Shared guard rails: a missing reference or an empty output is a 0 score with feedback."""

    name = "base"
    deterministic = True
    needs_reference = True

    def score(self, output: str, item: Item) -> Score:
        if self.needs_reference and item.reference is None:
            return Score(
                0.0,
                False,
                f"cannot score: item {item.id!r} has no reference (None); "
                "check the dataset's reference field",
            )
        text = output if isinstance(output, str) else ("" if output is None else str(output))
        if not text.strip():
            return Score(0.0, False, f"empty output; expected {self.describe(item)}")
        result = self._score(text, item)
        value = min(1.0, max(0.0, float(result.value)))
        return Score(value, result.passed, result.feedback)

    def describe(self, item: Item) -> str:
        """What a correct answer looks like, for feedback on an empty output."""
        return short(item.reference)

    def check_reference(self, reference: Any) -> str | None:
        """Why a dataset reference cannot be scored by this scorer, or None if it can."""
        return None

    def _score(self, output: str, item: Item) -> Score:
        raise NotImplementedError


def run_sync(awaitable: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaitable)
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    raise ConfigError("this scorer is async inside a running event loop: use `await ascore(...)`")


__all__ = ["BaseScorer", "Scorer", "run_sync"]
