"""The worked-example guard: an example may never carry a held-out (val or test) item's text.

Built once per run from the items (``train/screens/leaks.py``'s index over val and test, and
the held-out pairs below); an example whose text copies a held-out item, or holds one's input
together with its reference, is refused before it is proposed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from skillgrad.runs.records import Leak
from skillgrad.skill.text import Words, words
from skillgrad.train.screens.leaks import LeakIndex, describe, texts_of
from skillgrad.types import Item

HELD_OUT = ("val", "test")
TEMPLATE_TEXTS = 2
"""A key that this many different inputs (references) hold is phrasing the task repeats, not
one item's question (answer)."""


def _keys(value: object, n: int) -> set[Words]:
    """What identifies an item's input or reference: the ``n``-word runs of each of its strings,
    or a string shorter than ``n`` words whole."""
    out: set[Words] = set()
    for text in texts_of(value):
        ws = words(text)
        if len(ws) < n:
            out.update([ws] if ws else [])
        else:
            out.update(ws[i : i + n] for i in range(len(ws) - n + 1))
    return out


def _runs(ws: Words, n: int) -> Iterator[Words]:
    """Every run of 1 to ``n`` words of ``ws`` (an example is short)."""
    for i in range(len(ws)):
        for length in range(1, min(n, len(ws) - i) + 1):
            yield ws[i : i + length]


@dataclass(frozen=True)
class HeldOutPairs:
    """Held-out items by the keys of their input and of their reference (``_keys``), without
    the leak index's boilerplate rule: a question recurring verbatim in many items is still one
    question, however often it recurs. Only a key that different inputs share (different
    references, for a reference's key) is the task's template (instructions every input
    carries, a fixed answer preamble), and cannot tie an example to an item."""

    n: int
    inputs: dict[Words, frozenset[int]]
    references: dict[Words, frozenset[int]]
    items: tuple[tuple[str, str], ...]
    """(item id, split) of each held-out item."""

    @classmethod
    def build(cls, items: Mapping[str, Sequence[Item]], n: int) -> HeldOutPairs:
        rows = [(split, item) for split, group in items.items() for item in group]
        shown = [(_keys(i.input, n), _keys(i.reference, n)) for _, i in rows]
        faces = [(str(i.input), str(i.reference)) for _, i in rows]
        held = [k for k, (split, _) in enumerate(rows) if split in HELD_OUT]
        position = {k: j for j, k in enumerate(held)}

        def index(side: int) -> dict[Words, frozenset[int]]:
            owners: dict[Words, list[int]] = {}
            for k, keys in enumerate(shown):
                for key in keys[side]:
                    owners.setdefault(key, []).append(k)
            out = {}
            for key, ks in owners.items():
                template = len({faces[k][side] for k in ks}) >= TEMPLATE_TEXTS
                mine = frozenset(position[k] for k in ks if k in position)
                if mine and not template:
                    out[key] = mine
            return out

        ids = tuple((rows[k][1].id, rows[k][0]) for k in held)
        return cls(n, index(0), index(1), ids)

    def find(self, text: str) -> tuple[str, str] | None:
        """The first held-out item (id, split) whose input and reference ``text`` both hold."""
        runs = set(_runs(words(text), self.n))
        asked = {k for r in runs & self.inputs.keys() for k in self.inputs[r]}
        answered = {k for r in runs & self.references.keys() for k in self.references[r]}
        both = sorted(asked & answered)
        return self.items[both[0]] if both else None


@dataclass(frozen=True)
class ExampleGuard:
    """The leak check of an example against the val and test items: what it copies, or None."""

    index: LeakIndex
    pairs: HeldOutPairs | None = None

    @classmethod
    def build(cls, items: Mapping[str, Sequence[Item]], n: int) -> ExampleGuard:
        held = LeakIndex.build({s: items.get(s, []) for s in HELD_OUT}, n)
        return cls(held, HeldOutPairs.build(items, n))

    def copies(self, text: str) -> tuple[Leak, ...]:
        # one line too, so a short input next to its short reference is a pair (leaks rule 3)
        joined = " ".join(text.split("\n"))
        return self.index.find(text) + self.index.find(joined)

    def refusal(self, text: str) -> str:
        found = self.copies(text)
        if found:
            return f"copies a held-out item: {describe(found, limit=1)}"
        pair = self.pairs.find(text) if self.pairs is not None else None
        if pair is not None:
            return f"holds the input and the reference of held-out item {pair[0]} ({pair[1]})"
        return ""


__all__ = ["ExampleGuard", "HeldOutPairs"]
