"""The options of ``env.task: environment`` checked before any episode is built or played, and
the reset seeds of its splits (distinct within a split, disjoint across splits, the same on
every machine). A bad option is a ``ConfigError`` naming ``env.options.<key>`` (exit code 2).
"""

from __future__ import annotations

import math
import random
from typing import Any

from skillgrad.errors import ConfigError

MAX_SPLIT_SIZE = 100_000
"""The most episodes one split may ask for (every one is built before the run starts), as for
the built-in benchmarks."""
MAX_TIMEOUT = 3600.0
"""The longest ``step_timeout`` (seconds per ``reset`` or ``step``): an hour."""
MAX_STEPS = 10_000
SEED_RANGE = 1_000_000  # reset seeds of a split: its base + [0, SEED_RANGE)


def _where(key: str) -> str:
    return f"environment: env.options.{key}"


def check_count(key: str, value: object, minimum: int, maximum: int) -> None:
    """An integer (a bool is not) within ``minimum..maximum``, else a located ``ConfigError``."""
    if type(value) is not int or value < minimum:
        raise ConfigError(f"{_where(key)} must be an integer >= {minimum} (got {value!r})")
    if value > maximum:
        raise ConfigError(
            f"{_where(key)} is {value:,}; at most {maximum:,} is allowed (a typo? every episode "
            "of a split is built before the run starts)"
        )


def check_number(key: str, value: object, maximum: float | None = None) -> float:
    """A finite real number > 0 (and at most ``maximum``), else a located ``ConfigError``."""
    real = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not real or not math.isfinite(float(value)) or float(value) <= 0:  # type: ignore[arg-type]
        raise ConfigError(f"{_where(key)} must be a finite number > 0 (got {value!r})")
    number = float(value)  # type: ignore[arg-type]
    if maximum is not None and number > maximum:
        raise ConfigError(f"{_where(key)} is {number:g}; at most {maximum:g} is allowed")
    return number


def check_options(sizes: dict[str, object], options: dict[str, Any]) -> None:
    """Split sizes (each at most ``MAX_SPLIT_SIZE``), the seed, step limits and timeouts,
    reward and length caps, ``pass_env`` (a list of variable names)."""
    for split, n in sizes.items():
        check_count(f"n_{split}", n, 0, MAX_SPLIT_SIZE)
    if type(options["seed"]) is not int:
        raise ConfigError(f"{_where('seed')} must be an integer (got {options['seed']!r})")
    check_count("max_steps", options["max_steps"], 1, MAX_STEPS)
    check_number("step_timeout", options["step_timeout"], MAX_TIMEOUT)
    check_number("max_reward", options["max_reward"])
    for key in ("max_tokens", "max_observation_chars", "max_action_chars"):
        check_count(key, options[key], 1, 10_000_000)
    names = options["pass_env"]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ConfigError(
            f"{_where('pass_env')} must be a list of environment variable names (got {names!r})"
        )


def split_seeds(seed: int, split: str, n: int, base: int) -> list[int]:
    """``n`` distinct reset seeds of ``split``: episode ``i`` gets ``base`` plus its own draw
    from ``Random("seed:split:i")``, as always; a draw that repeats an earlier episode's is
    drawn again (``…:i:1``, ``…:i:2``, …), so a split that never collided keeps its episodes
    and ids, and no split can hold one id twice."""
    seen: set[int] = set()
    seeds = []
    for index in range(n):
        key, attempt = f"{seed}:{split}:{index}", 0
        value = random.Random(key).randrange(SEED_RANGE)
        while value in seen:
            attempt += 1
            value = random.Random(f"{key}:{attempt}").randrange(SEED_RANGE)
        seen.add(value)
        seeds.append(base + value)
    return seeds


__all__ = [
    "MAX_SPLIT_SIZE",
    "MAX_STEPS",
    "MAX_TIMEOUT",
    "SEED_RANGE",
    "check_count",
    "check_number",
    "check_options",
    "split_seeds",
]
