"""Built-in benchmark ``extraction``: pull order fields out of one short sentence as JSON.

Sentences are generated from templates with seeded random orders, e.g. "Order #4821 for 3 lamps
ships to Lyon on 12 May." -> ``{"order_id": "4821", "quantity": 3, "city": "Lyon"}``. Templates
vary word order and add distractor numbers (dates, prices). The scorer gives per-field partial
credit and per-field feedback. Generated data, Apache-2.0 (ours).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, ClassVar

from skillgrad.benchmarks.generated import GeneratedTask
from skillgrad.models.structured import extract_json
from skillgrad.tasks.base import Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import Item, Score

FIELDS = ("order_id", "quantity", "city")
CITIES = [
    "Lyon",
    "Oslo",
    "Porto",
    "Turin",
    "Ghent",
    "Bergen",
    "Krakow",
    "Leeds",
    "Seville",
    "Dresden",
    "Utrecht",
    "Bilbao",
    "Graz",
    "Nantes",
]
GOODS = [
    "lamps",
    "chairs",
    "kettles",
    "mugs",
    "rugs",
    "clocks",
    "vases",
    "towels",
    "pillows",
    "candles",
    "baskets",
]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
TEMPLATES = (
    "Order #{id} for {q} {goods} ships to {city} on {day} {month}.",
    "{q} {goods} (order {id}) are going to {city}.",
    "Ship {q} {goods} to {city}, ref #{id}, by {day} {month}.",
    "A customer in {city} ordered {q} {goods}; order number {id}.",
    "#{id}: {q} x {goods} at ${price} each, deliver to {city}.",
    "On {day} {month}, order {id} sent {q} {goods} to {city}.",
)
PROMPT = "Extract order_id, quantity and city as JSON.\nText: {text}\nJSON:"


def make_item(rng: random.Random, item_id: str) -> Item:
    values = {
        "id": str(rng.randint(1000, 9999)),
        "q": rng.randint(2, 12),
        "goods": rng.choice(GOODS),
        "city": rng.choice(CITIES),
        "day": rng.randint(1, 28),
        "month": rng.choice(MONTHS),
        "price": rng.randint(5, 90),
    }
    text = rng.choice(TEMPLATES).format(**values)
    reference = {"order_id": values["id"], "quantity": values["q"], "city": values["city"]}
    return Item(id=item_id, input=text, reference=reference)


def parse_object(output: str) -> dict[str, Any] | None:
    """The JSON object in the output (``models.structured.extract_json``: fences and surrounding
    prose tolerated), or None when there is none or the JSON value is not an object."""
    try:
        value = extract_json(output)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _field_ok(name: str, got: Any, want: Any) -> bool:
    if got is None:
        return False
    if name == "order_id":
        return str(got).strip().lstrip("#") == want
    if name == "quantity":
        try:
            return float(str(got).strip()) == float(want)
        except ValueError:
            return False
    return str(got).strip().casefold() == str(want).casefold()


def score_extraction(output: str, reference: dict[str, Any]) -> Score:
    """Per-field credit: each of order_id, quantity and city is worth a third."""
    data = parse_object(output)
    if data is None:
        shown = output.strip()[:100] or "(empty)"
        return Score(0.0, False, f"no JSON object found in the output {shown!r}; expected e.g. "
                     f"{json.dumps(reference)}")  # fmt: skip
    notes, right = [], 0
    for name in FIELDS:
        got, want = data.get(name), reference[name]
        if _field_ok(name, got, want):
            right += 1
            notes.append(f"{name}: ok")
        elif name not in data:
            notes.append(f"{name}: missing (expected {want!r})")
        else:
            notes.append(f"{name}: expected {want!r}, got {got!r}")
    extra = sorted(set(data) - set(FIELDS))
    if extra:
        notes.append(f"unexpected keys: {', '.join(extra)}")
    return Score(right / len(FIELDS), right == len(FIELDS), "; ".join(notes))


@dataclass
class ExtractionTask(GeneratedTask, ChatTask):
    """Seeded order sentences; options ``n_train``, ``n_val``, ``n_test``, ``seed``."""

    name: str = "extraction"
    max_tokens: int = 64
    family: ClassVar[str] = "extraction"

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        return make_item(rng, f"extraction-{split}-{index}")

    def prompt(self, item: Item) -> str:
        return PROMPT.format(text=item.input)

    def score(self, output: str, item: Item) -> Score:
        return score_extraction(output, item.reference)


__all__ = ["ExtractionTask", "make_item", "parse_object", "score_extraction"]
