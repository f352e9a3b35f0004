"""Train / val / test of a benchmark read from one published file: one seeded shuffle, one cut.

``bfcl``, ``ifbench`` and ``humaneval`` each draw all three splits from one shipped file: its
items, in file order, are shuffled by ``random.Random(key)`` and cut into ``n_train``, ``n_val``
and ``n_test`` (``None``: the rest), so the splits are disjoint and the same on every machine.
``check_sizes`` refuses a size or seed that is not a whole number in range, as a config error;
a split size is at most ``MAX_SPLIT_SIZE`` (for every built-in benchmark, generated ones too:
checked where the option is read, before any item is built, so a typo'd ``n_test: 1000000000``
is a clear error, not a machine out of memory).
"""

from __future__ import annotations

import random
from typing import TypeVar

from skillgrad.errors import ConfigError

T = TypeVar("T")

MAX_SPLIT_SIZE = 100_000
"""The most items one split may ask for (the largest built-in file holds a few thousand)."""


def check_int(
    task: str, key: str, value: object, minimum: int | None = 0, maximum: int | None = None
) -> None:
    """``ConfigError`` naming ``env.options.<key>`` unless ``value`` is an integer (a bool is
    not) of at least ``minimum`` and at most ``maximum``."""
    if type(value) is not int or (minimum is not None and value < minimum):
        bound = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise ConfigError(f"{task}: env.options.{key} must be {bound} (got {value!r})")
    if maximum is not None and value > maximum:
        raise ConfigError(
            f"{task}: env.options.{key} is {value:,}; at most {maximum:,} items are allowed per "
            "split (a typo? every item is built before the run starts)"
        )


def check_sizes(task: str, n_train: object, n_val: object, n_test: object, seed: object) -> None:
    """The split sizes (``n_test`` may be ``None``: the rest; each at most ``MAX_SPLIT_SIZE``)
    and the seed, checked up front."""
    check_int(task, "n_train", n_train, 0, MAX_SPLIT_SIZE)
    check_int(task, "n_val", n_val, 0, MAX_SPLIT_SIZE)
    if n_test is not None:
        check_int(task, "n_test", n_test, 0, MAX_SPLIT_SIZE)
    check_int(task, "seed", seed, None)


def seeded_cut(
    items: list[T], key: str, n_train: int, n_val: int, n_test: int | None, *, what: str
) -> dict[str, list[T]]:
    """``items`` shuffled by ``Random(key)`` and cut into train, val and test; asking for more
    than there are is a ``ConfigError`` naming ``what`` (e.g. ``bfcl: category 'simple'``)."""
    items = list(items)
    random.Random(key).shuffle(items)
    a, b = n_train, n_train + n_val
    asked = b if n_test is None else b + n_test
    if asked > len(items):
        sizes = "n_train + n_val" + ("" if n_test is None else " + n_test")
        raise ConfigError(
            f"{what} has {len(items)} usable items; {sizes} = {asked} is more "
            "(lower them, or n_test: null for the rest)"
        )
    end = len(items) if n_test is None else asked
    return {"train": items[:a], "val": items[a:b], "test": items[b:end]}


__all__ = ["MAX_SPLIT_SIZE", "check_int", "check_sizes", "seeded_cut"]
