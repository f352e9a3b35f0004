"""Built-in benchmark ``tool_use``: answer shop questions that need tool calls (multi-turn).

Each item is a tiny seeded shop (random prices and stock) and a question such as "How much do 3
lamps cost?". Prices and stock are only reachable through tools (``lookup_price``,
``lookup_stock``, ``multiply``, ``add``). The scorer checks the final number and its feedback
says which tools were called. Generated data, Apache-2.0 (ours).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from skillgrad.benchmarks.generated import GeneratedTask
from skillgrad.errors import ConfigError
from skillgrad.tasks.base import Split
from skillgrad.tasks.toolkit import Tool, make_tool
from skillgrad.tasks.tools import PROTOCOLS, ToolProtocol, ToolTask, tool_calls_of
from skillgrad.types import Item, Score

PRODUCTS = [
    "lamp",
    "chair",
    "kettle",
    "mug",
    "rug",
    "clock",
    "vase",
    "towel",
    "pillow",
    "candle",
    "basket",
    "mirror",
    "teapot",
    "stool",
    "blanket",
]
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")


def _plural(word: str) -> str:
    return word + "es" if word.endswith(("s", "sh", "ch", "x")) else word + "s"


def _question(rng: random.Random, prices: dict[str, int], stock: dict[str, int]) -> dict[str, Any]:
    kind = rng.choice(("stock", "stock", "price", "price", "two"))
    a, b = rng.sample(sorted(prices), 2)
    qa, qb = rng.randint(2, 9), rng.randint(2, 9)
    if kind == "stock":
        return {
            "question": f"How many {_plural(a)} are in stock?",
            "answer": stock[a],
            "needs": ["lookup_stock"],
        }
    if kind == "price":
        return {
            "question": f"What is the total price of {qa} {_plural(a)}?",
            "answer": qa * prices[a],
            "needs": ["lookup_price", "multiply"],
        }
    return {
        "question": f"What is the total price of {qa} {_plural(a)} and {qb} {_plural(b)}?",
        "answer": qa * prices[a] + qb * prices[b],
        "needs": ["lookup_price", "multiply", "add"],
    }


def make_item(rng: random.Random, item_id: str) -> Item:
    names = rng.sample(PRODUCTS, 5)
    prices = {n: rng.randint(2, 40) for n in names}
    stock = {n: rng.randint(0, 60) for n in names}
    q = _question(rng, prices, stock)
    meta = {"prices": prices, "stock": stock, "needs": q["needs"]}
    return Item(id=item_id, input=q["question"], reference=q["answer"], meta=meta)


def shop_tools(item: Item) -> list[Tool]:
    """The four tools, bound to this item's shop."""
    prices: dict[str, int] = item.meta["prices"]
    stock: dict[str, int] = item.meta["stock"]

    def find(name: str, table: dict[str, int]) -> int:
        for key in (name.strip().lower(), name.strip().lower().removesuffix("s")):
            if key in table:
                return table[key]
        raise ValueError(f"no product named {name!r}; products: {', '.join(sorted(table))}")

    def lookup_price(item: str) -> int:
        """Price in dollars of one unit of a product."""
        return find(item, prices)

    def lookup_stock(item: str) -> int:
        """How many units of a product are in stock."""
        return find(item, stock)

    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return _tidy(a * b)

    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return _tidy(a + b)

    return [make_tool(f) for f in (lookup_price, lookup_stock, multiply, add)]


def _tidy(x: float) -> float:
    return int(x) if float(x).is_integer() else round(x, 4)


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", ".")) for n in _NUMBER.findall(text.replace("$", ""))]


def _calls_text(steps: tuple[dict[str, Any], ...]) -> str:
    calls = tool_calls_of(steps)
    if not calls:
        return "no tool was called"
    shown = [f"{c['tool']}({c['arguments']}) -> {c['observation'][:60]}" for c in calls[:6]]
    return "tools called: " + "; ".join(shown)


@dataclass
class ToolUseBenchmark(GeneratedTask, ToolTask):
    """Seeded shop questions; options ``n_train``, ``n_val``, ``n_test``, ``seed``,
    ``tool_protocol`` (native|text|auto), ``max_steps``."""

    tool_protocol: ToolProtocol = "auto"
    max_steps: int = 6
    name: str = "tool_use"
    family: ClassVar[str] = "tool_use"

    def __post_init__(self) -> None:
        if self.tool_protocol not in PROTOCOLS:
            raise ConfigError(
                f"tool_use: tool_protocol must be one of {', '.join(PROTOCOLS)}, "
                f"got {self.tool_protocol!r}"
            )
        super().__post_init__()
        if self.max_steps < 1:
            raise ConfigError(f"tool_use: max_steps must be >= 1 (got {self.max_steps})")

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        return make_item(rng, f"tool_use-{split}-{index}")

    def tools(self, item: Item) -> list[Tool]:
        return shop_tools(item)

    def prompt(self, item: Item) -> str:
        return str(item.input)

    def protocol_example(self, tools: list[Tool]) -> str:
        return 'CALL lookup_price {"item": "lamp"}'

    def score(self, output: str, item: Item) -> Score:
        return self.score_trajectory(output, item, ())

    def score_trajectory(self, output: str, item: Item, steps: tuple[dict[str, Any], ...]) -> Score:
        """1.0 for the right final number; otherwise partial credit: up to 0.3 for calling the
        needed tools successfully, and 0.2 when the right number appears among at most three
        numbers (listing many numbers earns nothing)."""
        want, needs = float(item.reference), item.meta["needs"]
        numbers = _numbers(output)
        used = {c["tool"] for c in tool_calls_of(steps) if c.get("ok")}
        tools_note = _calls_text(steps)
        if any(t not in used for t in needs):
            tools_note += f"; this question needs {', '.join(needs)}"
        if numbers and abs(numbers[-1] - want) < 1e-6:
            return Score(1.0, True, f"correct: {item.reference}. {tools_note}")
        got = output.strip()[:120] or "(empty answer)"
        value = 0.3 * sum(t in used for t in needs) / len(needs)
        if len(numbers) <= 3 and any(abs(n - want) < 1e-6 for n in numbers):
            value += 0.2
            head = f"the right number {item.reference} appears but is not the last number"
            return Score(value, False, f"{head} in {got!r}. {tools_note}")
        return Score(value, False, f"expected {item.reference}, got {got!r}. {tools_note}")


__all__ = ["ToolUseBenchmark", "make_item", "shop_tools"]
