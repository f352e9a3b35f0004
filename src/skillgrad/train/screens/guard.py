"""The worked-example guard: an example may never carry a held-out (val or test) item's text.

Built once per run from the val and test items (``train/screens/leaks.py``'s index); an example
whose text copies one is refused before it is proposed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from skillgrad.runs.records import Leak
from skillgrad.train.screens.leaks import LeakIndex, describe
from skillgrad.types import Item


@dataclass(frozen=True)
class ExampleGuard:
    """The leak check of an example against the val and test items: what it copies, or None."""

    index: LeakIndex

    @classmethod
    def build(cls, items: Mapping[str, Sequence[Item]], n: int) -> ExampleGuard:
        return cls(LeakIndex.build({s: items.get(s, []) for s in ("val", "test")}, n))

    def copies(self, text: str) -> tuple[Leak, ...]:
        # one line too, so a short input next to its short reference is a pair (leaks rule 3)
        joined = " ".join(text.split("\n"))
        return self.index.find(text) + self.index.find(joined)

    def refusal(self, text: str) -> str:
        found = self.copies(text)
        return f"copies a held-out item: {describe(found, limit=1)}" if found else ""


__all__ = ["ExampleGuard"]
