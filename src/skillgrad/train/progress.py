"""Progress reporting seam for the phases (Rich bars in the console, nothing in tests)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, stage: str, total: int) -> None: ...

    def advance(self, stage: str, n: int = 1, info: str = "") -> None: ...

    def finish(self, stage: str) -> None: ...


class NullProgress:
    def start(self, stage: str, total: int) -> None:
        pass

    def advance(self, stage: str, n: int = 1, info: str = "") -> None:
        pass

    def finish(self, stage: str) -> None:
        pass


__all__ = ["NullProgress", "Progress"]
