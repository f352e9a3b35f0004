"""A complete user task in its own file: convert between units, scored numerically.

Nothing here is registered inside skillgrad: the config names this file (``my_task.py:MyTask``)
and skillgrad imports it. Train it with ``skillgrad train examples/custom_task/config.yaml``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from skillgrad.errors import DataError
from skillgrad.scorers import NumericScorer
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import Item, Score


@dataclass
class MyTask(ChatTask):
    """Rows of ``data_file`` look like
    ``{"id": "km-1", "split": "train", "question": "3 km in m?", "answer": 3000}``."""

    data_file: str = "data.jsonl"
    tolerance: float = 0.01  # relative: 1% off still counts as right
    base_dir: Path | None = None  # skillgrad passes the config file's folder here
    name: str = "unit_conversion"
    max_tokens: int = 32
    _items: dict[str, list[Item]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.scorer = NumericScorer(rel_tolerance=self.tolerance)

    def _read(self) -> dict[str, list[Item]]:
        path = Path(self.base_dir or ".") / self.data_file
        items: dict[str, list[Item]] = {split: [] for split in SPLITS}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                items[row["split"]].append(
                    Item(id=row["id"], input=row["question"], reference=row["answer"])
                )
            except (json.JSONDecodeError, KeyError) as exc:
                # Say which file, line and field is wrong: skillgrad shows this before training.
                raise DataError(f"{path} line {number}: bad row ({exc!r})") from exc
        return items

    def load_split(self, split: Split) -> list[Item]:
        if not self._items:
            self._items = self._read()
        return list(self._items[split])

    def prompt(self, item: Item) -> str:
        return f"{item.input}\nReply with the number only."

    def score(self, output: str, item: Item) -> Score:
        return self.scorer.score(output, item)
