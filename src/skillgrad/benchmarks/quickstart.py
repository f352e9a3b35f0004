"""The built-in quickstart: sentiment labels with a strict output format, fully offline.

Reviews are generated procedurally from a seed (train / val / test with disjoint ids). The
target must answer with exactly one word, ``positive`` or ``negative``. The scorer is
deterministic and explains every miss, so the skill text measurably changes the score even on
the 135M embedded model: format rules and examples move it; the gate keeps harmful edits out.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import ClassVar

from skillgrad.benchmarks.generated import GeneratedTask
from skillgrad.tasks.base import Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import Item, Score

LABELS = ("positive", "negative")
_SUBJECTS = (
    "pasta",
    "hotel room",
    "phone",
    "concert",
    "movie",
    "coffee",
    "service",
    "laptop",
    "book",
    "bike",
    "haircut",
    "train ride",
    "museum",
    "jacket",
    "soup",
    "game",
)
_WORDS = {
    "positive": (
        "delicious",
        "wonderful",
        "excellent",
        "friendly",
        "fantastic",
        "lovely",
        "superb",
        "comfortable",
        "delightful",
        "brilliant",
        "great",
        "perfect",
    ),
    "negative": (
        "awful",
        "terrible",
        "broken",
        "rude",
        "disappointing",
        "cold",
        "boring",
        "dirty",
        "horrible",
        "noisy",
        "useless",
        "bland",
    ),
}
_TEMPLATES = (
    "The {s} was {w}.",
    "Honestly, the {s} was {w} and I would say so again.",
    "What a {w} {s}!",
    "I found the {s} {w}.",
    "My {s} turned out {w}, start to finish.",
    "Everyone agreed the {s} was {w}.",
)
_CONTRAST = "The {s} looked {w0} at first, but in the end it was {w}."


@dataclass
class QuickstartTask(GeneratedTask, ChatTask):
    """Options: ``n_train``, ``n_val``, ``n_test``, ``seed``, ``contrast_rate`` (share of
    harder "X at first, but Y" reviews)."""

    n_train: int = 24
    n_val: int = 16
    n_test: int = 16
    seed: int = 0
    contrast_rate: float = 0.25
    name: str = "quickstart"
    max_tokens: int = 12
    family: ClassVar[str] = "quickstart"
    min_split_size: ClassVar[int] = 1
    one_stream: ClassVar[bool] = True  # the README's numbers were measured on this stream

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        text, label = self._review(rng)
        return Item(id=f"{split}-{index:03d}", input=text, reference=label)

    def item_key(self, item: Item) -> str:
        """Two reviews with the same text are the same item, whatever their label."""
        return str(item.input)

    def _review(self, rng: random.Random) -> tuple[str, str]:
        label = rng.choice(LABELS)
        subject, word = rng.choice(_SUBJECTS), rng.choice(_WORDS[label])
        if rng.random() < self.contrast_rate:
            other = rng.choice(_WORDS["negative" if label == "positive" else "positive"])
            return _CONTRAST.format(s=subject, w0=other, w=word), label
        return rng.choice(_TEMPLATES).format(s=subject, w=word), label

    def prompt(self, item: Item) -> str:
        return f"Review: {item.input}"

    def score(self, output: str, item: Item) -> Score:
        return score_label(output, str(item.reference))


def score_label(output: str, reference: str) -> Score:
    """1.0 for exactly the right label; 0.5 if the right label is the only one named but with
    extra words; 0 otherwise. Feedback says which case and what was expected."""
    words = re.findall(r"[a-z]+", output.lower())
    found = [w for w in words if w in LABELS]
    shown = output.strip().replace("\n", " ")[:80]
    rule = f"the reply must be exactly one word, positive or negative (here: {reference})"
    if words == [reference]:
        return Score(1.0, True, "correct")
    if not words:
        return Score(0.0, False, f"empty reply; {rule}")
    if set(found) == {reference}:
        return Score(0.5, False, f"right label but extra words in {shown!r}; {rule}")
    if len(set(found)) > 1:
        return Score(0.0, False, f"reply names both labels ({shown!r}); {rule}")
    if found:
        return Score(0.0, False, f"wrong label in {shown!r}; {rule}")
    return Score(0.0, False, f"no label in reply {shown!r}; {rule}")


__all__ = ["LABELS", "QuickstartTask", "score_label"]
