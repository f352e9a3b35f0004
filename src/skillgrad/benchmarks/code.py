"""Built-in benchmark ``code``: write a small Python function; hidden tests decide the score.

Problems come from seeded families (sum of multiples of k, count above a threshold, clamp,
running sums, vowel counts, ...) with random constants, so items differ within a family. Each
item's reference holds a reference solution and 5 assert tests whose expected values are
computed by running that solution. Generated data, Apache-2.0 (ours).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from skillgrad.benchmarks.generated import GeneratedTask
from skillgrad.sandbox import preflight
from skillgrad.tasks.base import Split
from skillgrad.tasks.code import CodeTask
from skillgrad.types import Item

Inputs = list[tuple[Any, ...]]
Problem = tuple[str, str, str, Inputs]  # name, description, reference source, test inputs
WORDS = ["apple", "sky", "river", "stone", "idea", "cloud", "moon", "tree"]


def _ints(rng: random.Random, n: int, lo: int = -9, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


def _lists(rng: random.Random) -> Inputs:
    return [(_ints(rng, rng.randint(3, 7)),) for _ in range(3)] + [([],), ([rng.randint(1, 9)],)]


def _texts(rng: random.Random) -> Inputs:
    texts = [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(3)]
    return [(t.title() if i == 1 else t,) for i, t in enumerate(texts)] + [("",), ("AEIOU xyz",)]


def sum_multiples(rng: random.Random) -> Problem:
    k = rng.choice((2, 3, 5))
    desc = f"returns the sum of the numbers in the list `xs` that are divisible by {k}"
    src = f"def sum_multiples(xs):\n    return sum(x for x in xs if x % {k} == 0)\n"
    return "sum_multiples", desc, src, _lists(rng)


def count_above(rng: random.Random) -> Problem:
    t = rng.randint(0, 9)
    desc = f"returns how many numbers in the list `xs` are strictly greater than {t}"
    src = f"def count_above(xs):\n    return sum(1 for x in xs if x > {t})\n"
    return "count_above", desc, src, _lists(rng)


def clamp_all(rng: random.Random) -> Problem:
    lo, hi = sorted(rng.sample(range(-3, 12), 2))
    desc = f"returns a new list with each number of `xs` clamped to the range [{lo}, {hi}]"
    src = f"def clamp_all(xs):\n    return [min(max(x, {lo}), {hi}) for x in xs]\n"
    return "clamp_all", desc, src, _lists(rng)


def running_sum(rng: random.Random) -> Problem:
    desc = "returns the list of running totals of `xs` (element i is the sum of xs[0..i])"
    src = (
        "def running_sum(xs):\n    out, total = [], 0\n    for x in xs:\n"
        "        total += x\n        out.append(total)\n    return out\n"
    )
    return "running_sum", desc, src, _lists(rng)


def spread(rng: random.Random) -> Problem:
    desc = "returns the largest number of `xs` minus the smallest, or 0 if `xs` is empty"
    src = "def spread(xs):\n    return max(xs) - min(xs) if xs else 0\n"
    return "spread", desc, src, _lists(rng)


def count_vowels(rng: random.Random) -> Problem:
    desc = "returns how many vowels (a, e, i, o, u, upper or lower case) the string `s` has"
    src = "def count_vowels(s):\n    return sum(1 for c in s.lower() if c in 'aeiou')\n"
    return "count_vowels", desc, src, _texts(rng)


def reverse_words(rng: random.Random) -> Problem:
    desc = "returns the words of the string `s` in reverse order, joined by single spaces"
    src = "def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n"
    return "reverse_words", desc, src, _texts(rng)


def dedupe(rng: random.Random) -> Problem:
    desc = "returns `xs` without repeated numbers, keeping the first occurrence of each, in order"
    src = "def dedupe(xs):\n    return list(dict.fromkeys(xs))\n"
    inputs = [([rng.randint(0, 4) for _ in range(rng.randint(4, 8))],) for _ in range(3)]
    return "dedupe", desc, src, [*inputs, ([],), ([7, 7, 7],)]


def repeat_chars(rng: random.Random) -> Problem:
    n = rng.randint(2, 3)
    example = f"`ab` -> `{'a' * n}{'b' * n}`"
    desc = f"returns the string `s` with every character repeated {n} times ({example})"
    src = f"def repeat_chars(s):\n    return ''.join(c * {n} for c in s)\n"
    return "repeat_chars", desc, src, _texts(rng)


FAMILIES: tuple[Callable[[random.Random], Problem], ...] = (
    sum_multiples,
    count_above,
    clamp_all,
    running_sum,
    spread,
    count_vowels,
    reverse_words,
    dedupe,
    repeat_chars,
)


def make_item(rng: random.Random, item_id: str) -> Item:
    name, desc, src, inputs = rng.choice(FAMILIES)(rng)
    namespace: dict[str, Any] = {}
    exec(src, namespace)  # our own reference solution, not model output
    fn = namespace[name]
    tests = "".join(
        f"assert {name}({', '.join(map(repr, args))}) == {fn(*args)!r}\n" for args in inputs
    )
    params = src.split("(", 1)[1].split(")", 1)[0]
    prompt = f"Write a Python function `{name}({params})` that {desc}."
    return Item(
        id=item_id,
        input={"prompt": prompt, "entry_point": name},
        reference={"solution": src, "tests": tests},
        meta={"family": name},
    )


@dataclass
class CodeBenchmark(GeneratedTask, CodeTask):
    """Seeded function-writing problems; options ``n_train``, ``n_val``, ``n_test``, ``seed``,
    ``timeout_s``, ``memory_mb``, ``sandbox`` (``unsandboxed`` opts out of the box by name)."""

    timeout_s: float = 10.0
    memory_mb: int = 256
    sandbox: str = "bubblewrap"
    name: str = "code"
    family: ClassVar[str] = "code"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.sandbox = preflight(self.sandbox)

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        return make_item(rng, f"code-{split}-{index}")

    def prompt(self, item: Item) -> str:
        return str(item.input["prompt"])

    def tests(self, item: Item) -> str:
        return str(item.reference["tests"])

    def entry_point(self, item: Item) -> str:
        return str(item.input["entry_point"])


__all__ = ["FAMILIES", "CodeBenchmark", "make_item"]
