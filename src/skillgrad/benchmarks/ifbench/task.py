"""Built-in benchmark ``ifbench``: AllenAI's IFBench (precise instruction following), offline.

The prompts and the official checkers come from the pinned ``ifbench`` data bundle (fetched once
with ``skillgrad data pull ifbench``). IFBench ships one file of 294 test prompts, so train, val
and test are all drawn from it by one seeded shuffle. A reply scores the fraction of its
prompt's instructions it follows, as the official checkers judge (loose by default, the mode the
IFBench paper reports; ``mode: strict`` for the strict one); the feedback names every instruction
not followed, in the checker's own words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.benchmarks.ifbench.checkers import UNCHECKABLE, OfficialCheckers, load_checkers
from skillgrad.benchmarks.ifbench.data import BUNDLE, PROMPTS_FILE
from skillgrad.benchmarks.splits import check_int, check_sizes, seeded_cut
from skillgrad.errors import ConfigError, DataError
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import Item, Score

MODES = ("loose", "strict")
_LOOSE_ONLY = "it passes only with the reply's first or last line or its * marks removed"


def _row_item(row: Any, checkers: OfficialCheckers) -> Item:
    """One prompt as an Item; the reference holds its instructions (id, arguments, words)."""
    ids, all_kwargs = row["instruction_id_list"], row["kwargs"]
    if not isinstance(row["prompt"], str) or not ids or len(ids) != len(all_kwargs):
        raise ValueError("needs a prompt and one kwargs object per instruction id")
    instructions, randomized = [], []
    for iid, kwargs in zip(ids, all_kwargs, strict=True):
        if iid not in checkers.known:
            raise ValueError(f"unknown instruction id {iid!r}")
        given = {k: v for k, v in kwargs.items() if v is not None}
        description, replaced = checkers.describe(iid, given)
        instructions.append({"id": iid, "kwargs": given, "description": description})
        randomized += [f"{iid} {name}" for name in replaced]
    meta: dict[str, Any] = {"key": str(row["key"])}
    if randomized:
        meta["random_verdict"] = randomized
    return Item(
        id=f"ifbench-{row['key']}",
        input=row["prompt"],
        reference={"instructions": instructions},
        meta=meta,
    )


def read_prompts(path: Path, checkers: OfficialCheckers) -> list[Item]:
    """Every prompt of the IFBench file, in file order; ``DataError`` names the bad line."""
    items, seen = [], set()
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                item = _row_item(json.loads(line), checkers)
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
                raise DataError(
                    f"{path}, line {n}: not an IFBench prompt ({type(exc).__name__}: {exc}); "
                    "each line needs key, prompt, instruction_id_list and kwargs"
                ) from exc
            if item.id in seen:
                raise DataError(f"{path}, line {n}: duplicate key {item.meta['key']!r}")
            seen.add(item.id)
            items.append(item)
    return items


def checkable(item: Item) -> bool:
    """False for a prompt with an instruction whose checker cannot run offline, or whose
    official checker ignores a given argument and draws it at random (``random_verdict``)."""
    if item.meta.get("random_verdict"):
        return False
    return not any(i["id"] in UNCHECKABLE for i in item.reference["instructions"])


@dataclass
class IFBenchTask(ChatTask):
    """IFBench prompts, split by a seeded shuffle into ``n_train`` / ``n_val`` / ``n_test``
    (``n_test=None``: the rest). ``mode``: ``loose`` (default) or ``strict``. ``data_dir``: a
    bundle folder other than the cache (relative to the config file)."""

    n_train: int = 40
    n_val: int = 40
    n_test: int | None = None
    seed: int = 0
    mode: str = "loose"
    max_tokens: int = 1024
    data_dir: str | None = None
    base_dir: Path | None = None
    name: str = "ifbench"
    _splits: dict[str, list[Item]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(
                f"ifbench: env.options.mode must be loose or strict, not {self.mode!r}"
            )
        check_sizes("ifbench", self.n_train, self.n_val, self.n_test, self.seed)
        check_int("ifbench", "max_tokens", self.max_tokens, 1)
        # checked now, so a missing or edited file stops the run before any model call
        self._root = BUNDLE.verify(self._data_root())
        load_checkers(self._root)

    def _data_root(self) -> Path | None:
        if self.data_dir is None:
            return None
        path = Path(self.data_dir).expanduser()
        return path if path.is_absolute() or self.base_dir is None else self.base_dir / path

    def all_items(self) -> list[Item]:
        """Every prompt the official checkers can judge offline, in file order."""
        items = read_prompts(self._root / PROMPTS_FILE, load_checkers(self._root))
        return [item for item in items if checkable(item)]

    def load_split(self, split: Split) -> list[Item]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        if not self._splits:
            key, sizes = f"ifbench:{self.seed}", (self.n_train, self.n_val, self.n_test)
            self._splits = seeded_cut(self.all_items(), key, *sizes, what="ifbench")
        return list(self._splits[split])

    def prompt(self, item: Item) -> str:
        return str(item.input)

    def score(self, output: str, item: Item) -> Score:
        checkers = load_checkers(self._root)
        instructions = item.reference["instructions"]
        lines, followed = [], 0
        for ins in instructions:
            verdict = _judge(checkers, str(item.input), ins, output, self.mode)
            followed += verdict is None or verdict.startswith("followed")
            lines.append(f"- {ins['id']}: {verdict or 'followed'}")
        n = len(instructions)
        head = f"followed {followed} of {n} instruction{'s' if n > 1 else ''} ({self.mode} check)"
        if not output.strip():
            head = f"empty reply: 0 of {n} instruction{'s' if n > 1 else ''} followed"
        return Score(followed / n, followed == n, "\n".join([head, *lines]))


def _judge(
    checkers: OfficialCheckers, prompt: str, ins: dict[str, Any], output: str, mode: str
) -> str | None:
    """None when followed outright; otherwise why not (or a note on a loose-only pass)."""
    try:
        strict, loose = checkers.follows(prompt, ins["id"], ins["kwargs"], output)
    except Exception as exc:  # an official checker crashing on odd text: not followed
        return (
            f"NOT followed (the checker could not read the reply: {type(exc).__name__}). "
            f"Instruction: {ins['description']}"
        )
    if strict:
        return None
    if loose and mode == "loose":
        return f"followed loosely: {_LOOSE_ONLY}"
    extra = f" ({_LOOSE_ONLY}, which the strict check does not allow)" if loose else ""
    return f"NOT followed{extra}. Instruction: {ins['description']}"


__all__ = ["MODES", "IFBenchTask", "checkable", "read_prompts"]
