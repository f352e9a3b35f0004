"""Progress reporting seam for the phases (Rich bars in the console, nothing in tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Progress(Protocol):
    """Contract: ``start``/``advance``/``finish`` per named stage; ``set_usage_source`` is called
    once the run's call store exists, with a function returning its running totals (calls,
    prompt_tokens, completion_tokens, cost), for display beside the bars."""

    def set_usage_source(self, usage: Callable[[], dict[str, float]]) -> None: ...

    def start(self, stage: str, total: int) -> None: ...

    def advance(self, stage: str, n: int = 1, info: str = "") -> None: ...

    def finish(self, stage: str) -> None: ...


class NullProgress:
    def set_usage_source(self, usage: Callable[[], dict[str, float]]) -> None:
        pass

    def start(self, stage: str, total: int) -> None:
        pass

    def advance(self, stage: str, n: int = 1, info: str = "") -> None:
        pass

    def finish(self, stage: str) -> None:
        pass


__all__ = ["NullProgress", "Progress"]
