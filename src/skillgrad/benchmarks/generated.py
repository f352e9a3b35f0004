"""``GeneratedTask``: the base of every built-in benchmark whose items are generated from a seed.

A subclass sets its split sizes and seed (dataclass fields ``n_train``, ``n_val``, ``n_test``,
``seed``) and writes one per-item generator, ``make_item(rng, split, index)``. This module
writes the splits once:

- splits are drawn in the order train, val, test; an item whose ``item_key`` was already drawn
  (in any split) is drawn again with the same index, so the three splits are disjoint;
- the same seed and sizes always give the same items (each split's ``split_rng`` is seeded from
  the task's ``family``, the seed and the split; with ``one_stream`` a single
  ``Random(seed)`` runs through train, val and test in that order);
- items are generated once per task object and never mutated; ``load_split`` returns a copy
  of the list.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from skillgrad.benchmarks.splits import MAX_SPLIT_SIZE, check_int
from skillgrad.errors import ConfigError, DataError
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.types import Item

MAX_REDRAWS = 1000  # per item: a generator that keeps repeating itself is a bug, not bad luck


def content_key(item: Item) -> str:
    """An item's content without its id (input, reference, meta), as canonical JSON."""
    return json.dumps([item.input, item.reference, item.meta], sort_keys=True, default=str)


def generate_splits(
    sizes: Mapping[Split, int],
    rng_for: Callable[[Split], random.Random],
    make_item: Callable[[random.Random, Split, int], Item],
    key: Callable[[Item], Hashable] = content_key,
) -> dict[Split, list[Item]]:
    """Draw ``sizes[split]`` items per split, train then val then test, re-drawing an item whose
    ``key`` was seen before so the splits are disjoint. Raises DataError when a generator cannot
    produce a new item (its space is smaller than the sizes asked for)."""
    seen: set[Hashable] = set()
    out: dict[Split, list[Item]] = {}
    for split in SPLITS:
        rng = rng_for(split)
        items: list[Item] = []
        redraws = 0
        while len(items) < sizes[split]:
            item = make_item(rng, split, len(items))
            k = key(item)
            if k in seen:
                redraws += 1
                if redraws > MAX_REDRAWS:
                    raise DataError(
                        f"{split} split: the generator repeated itself {MAX_REDRAWS} times at "
                        f"item {len(items)}; ask for fewer items (n_train/n_val/n_test)"
                    )
                continue
            seen.add(k)
            items.append(item)
            redraws = 0
        out[split] = items
    return out


@dataclass
class GeneratedTask:
    """Seeded, generated splits; mix in before the rollout kind (``ChatTask``, ``ToolTask``,
    ``CodeTask``). Subclasses define ``make_item`` and may override ``split_rng``,
    ``item_key``, ``min_split_size`` and ``one_stream``; their own ``__post_init__`` calls
    ``super().__post_init__()``."""

    n_train: int = 12
    n_val: int = 8
    n_test: int = 8
    seed: int = 0
    _splits: dict[Split, list[Item]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    family: ClassVar[str] = "generated"  # names the random streams and the size errors
    min_split_size: ClassVar[int] = 0
    one_stream: ClassVar[bool] = False  # True: one Random(seed) runs through all three splits

    def __post_init__(self) -> None:
        self.check_sizes()

    def check_sizes(self) -> None:
        """Raise ConfigError for a split size that is no integer, below ``min_split_size`` or
        above ``splits.MAX_SPLIT_SIZE`` (at construction: before any item is built)."""
        for key, n in (("n_train", self.n_train), ("n_val", self.n_val), ("n_test", self.n_test)):
            check_int(self.family, key, n, None, MAX_SPLIT_SIZE)
            if n < self.min_split_size:
                raise ConfigError(
                    f"{self.family}: env.options.{key} must be >= {self.min_split_size} (got {n})"
                )

    def split_rng(self, split: Split) -> random.Random:
        """The random stream of ``split``: by default its own, seeded by family, seed and split."""
        return random.Random(f"{self.family}:{self.seed}:{split}")

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        """Item ``index`` of ``split``, drawn from ``rng`` (ids must be unique across splits)."""
        raise NotImplementedError

    def item_key(self, item: Item) -> Hashable:
        """What makes two items the same (for disjoint splits): by default all but the id."""
        return content_key(item)

    def load_split(self, split: Split) -> list[Item]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        if not self._splits:
            sizes: dict[Split, int] = {
                "train": self.n_train,
                "val": self.n_val,
                "test": self.n_test,
            }
            rng_for: Callable[[Split], random.Random] = self.split_rng
            if self.one_stream:
                shared = random.Random(self.seed)
                rng_for = lambda _split: shared  # noqa: E731
            self._splits.update(generate_splits(sizes, rng_for, self.make_item, self.item_key))
        return list(self._splits[split])


__all__ = ["MAX_REDRAWS", "GeneratedTask", "content_key", "generate_splits"]
