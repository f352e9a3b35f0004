"""``DataTask`` (entry point ``data``): a chat task from your own data files and a prompt template,
with no Python. Splits come from a folder (``train/ val/ test/`` or ``train.jsonl`` ...) or from one
file cut by seeded ratios. Every data problem is found and reported, with file, line and field,
before any model is called.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from skillgrad.errors import (
    ConfigError,
    DataError,
)
from skillgrad.models.base import ModelBackend
from skillgrad.scorers import build_scorer
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.tasks.loaders import (
    Problems,
    Row,
    file_format,
    get_field,
    ratio_split,
    read_rows,
    render,
    split_files,
    template_fields,
)
from skillgrad.types import Item, Message, Score

_DEFAULT_RATIOS: dict[Split, float] = {"train": 0.6, "val": 0.2, "test": 0.2}


class DataOptions(BaseModel):
    """``env.options`` of ``task: data``: ``split_dir``, or ``file`` + ``ratios`` + ``seed``."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="template such as 'Question: {question}'; dots for nesting")
    split_dir: str | None = None
    file: str | None = None
    ratios: dict[Split, float] = Field(default_factory=lambda: dict(_DEFAULT_RATIOS))
    seed: int = 0
    id_field: str | None = None
    reference_field: str = "answer"
    scorer: str | dict[str, Any] = "normalized"
    max_tokens: int = Field(256, ge=1)
    system_suffix: str | None = None
    name: str = "data"

    @model_validator(mode="after")
    def _one_source(self) -> DataOptions:
        if (self.split_dir is None) == (self.file is None):
            raise ValueError("give exactly one of 'split_dir' (a folder) or 'file' (+ ratios)")
        if self.split_dir is not None and "ratios" in self.model_fields_set:
            raise ValueError("'ratios' only applies with 'file', not with 'split_dir'")
        if any(v < 0 for v in self.ratios.values()) or sum(self.ratios.values()) <= 0:
            raise ValueError(f"ratios must be >= 0 with a positive sum, got {self.ratios}")
        return self


def _explain(exc: ValidationError) -> str:
    known = sorted(DataOptions.model_fields)
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "options"
        if err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(where, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            lines.append(f"unknown option {where!r}.{hint} Known options: {', '.join(known)}")
        else:
            lines.append(f"{where}: {err['msg']}")
    return "task 'data': " + "; ".join(lines)


class DataTask(ChatTask):
    """A chat task defined by data files, a prompt template, a reference field and a scorer."""

    def __init__(self, base_dir: str | Path | None = None, **options: Any) -> None:
        try:
            self.options = DataOptions.model_validate(options)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None
        opts = self.options
        self.base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
        self.name, self.max_tokens = opts.name, opts.max_tokens
        self.fields = template_fields(opts.prompt)
        ref = opts.reference_field
        if any(f == ref or f.startswith(ref + ".") for f in self.fields):
            raise ConfigError(
                f"the prompt template uses the reference field {ref!r}: the target would see the "
                "gold answer. Remove it from 'prompt' or set 'reference_field'."
            )
        if opts.file is not None:
            file_format(self._path(opts.file))  # an unsupported extension is a config error
        self.scorer = build_scorer(opts.scorer, self.base_dir)
        self._splits: dict[str, list[Item]] | None = None
        self._problems = Problems()
        self._missing: set[str] = set()  # splits whose folder/file is missing (already reported)
        self._n_rows = 0

    # -- loading -----------------------------------------------------------------------------

    def _path(self, value: str) -> Path:
        path = Path(value)
        return path if path.is_absolute() else self.base_dir / path

    def _shown(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.base_dir))
        except ValueError:
            return str(path)

    def _rows(self) -> dict[str, list[Row]]:
        opts, problems = self.options, self._problems
        if opts.split_dir is not None:
            root = self._path(opts.split_dir)
            if not root.is_dir():
                problems.add(f"split_dir {self._shown(root)} is not a folder")
                self._missing.update(SPLITS)
                return {s: [] for s in SPLITS}
            out: dict[str, list[Row]] = {}
            for split in SPLITS:
                files = split_files(root, split, problems, self._shown)
                if not files:
                    self._missing.add(split)
                out[split] = [row for f in files for row in self._read(f)]
            return out
        path = self._path(opts.file or "")
        if not path.is_file():
            problems.add(f"data file {self._shown(path)} does not exist")
            self._missing.update(SPLITS)
            return {s: [] for s in SPLITS}
        rows = self._read(path)
        self._n_rows = len(rows)
        if not rows:  # one message, not three "empty split" ones
            problems.add(f"data file {self._shown(path)} has no usable rows")
            self._missing.update(SPLITS)
        return ratio_split(rows, opts.ratios, opts.seed)

    def _empty_reason(self, split: str) -> str:
        if self.options.file is None:
            return "its files have no rows"
        ratio = self.options.ratios.get(split, 0.0)  # type: ignore[call-overload]
        return f"ratio {ratio} of {self._n_rows} readable rows in {self.options.file} gives none"

    def _read(self, path: Path) -> list[Row]:
        return read_rows(path, self._shown(path), self._problems)

    def _item_id(self, row: Row) -> str | None:
        field = self.options.id_field
        if field is None:
            value = row.data.get("id")
            if value is None or value == "":
                return f"{Path(row.file).stem}-{row.line}"
        else:
            found, value = get_field(row.data, field)
            if not found or value is None or value == "":
                self._problems.add(f"{row.where}: id field {field!r} is missing or empty")
                return None
        return str(value)

    def _item(self, row: Row) -> Item | None:
        problems, opts, ok = self._problems, self.options, True
        keys = ", ".join(row.data) or "no fields"
        for field in self.fields:
            if not get_field(row.data, field)[0]:
                problems.add(f"{row.where}: field {field!r} used by the prompt is missing ({keys})")
                ok = False
        found, ref = get_field(row.data, opts.reference_field)
        if not found or ref is None or ref == "":
            what = "missing" if not found else "empty"
            problems.add(
                f"{row.where}: reference field {opts.reference_field!r} is {what} ({keys})"
            )
            ok = False
        elif (why := self.scorer.check_reference(ref)) is not None:
            problems.add(f"{row.where}: field {opts.reference_field!r}: {why}")
            ok = False
        item_id = self._item_id(row)
        if not ok or item_id is None:
            return None
        data = {k: v for k, v in row.data.items() if k != opts.reference_field}
        try:
            render(opts.prompt, data)
        except DataError as exc:
            problems.add(f"{row.where}: {exc}")
            return None
        return Item(item_id, data, ref, {"file": row.file, "line": row.line})

    def _load(self) -> dict[str, list[Item]]:
        if self._splits is not None:
            return self._splits
        splits: dict[str, list[Item]] = {}
        first_seen: dict[str, tuple[str, str]] = {}  # id -> (split, where)
        for split, rows in self._rows().items():
            items = []
            for row in rows:
                item = self._item(row)
                if item is None:
                    continue
                seen = first_seen.get(item.id)
                if seen is None:
                    first_seen[item.id] = (split, row.where)
                    items.append(item)
                elif seen[0] == split:
                    self._problems.add(f"duplicate id {item.id!r}: {seen[1]} and {row.where}")
                else:
                    self._problems.add(
                        f"id {item.id!r} is in both {seen[0]!r} ({seen[1]}) and {split!r} "
                        f"({row.where}): splits must not share items"
                    )
            if not rows and split not in self._missing:
                self._problems.add(f"split {split!r} is empty: {self._empty_reason(split)}")
            splits[split] = items
        self._splits = splits
        return splits

    # -- the Task interface ---------------------------------------------------------------------

    def validate(self) -> dict[str, int]:
        """Load all splits and raise one DataError listing every problem found (up to 20, then
        a count). Returns the number of items per split."""
        splits = self._load()
        self._problems.raise_if_any(f"task {self.name!r}: the data is not usable")
        return {s: len(items) for s, items in splits.items()}

    def load_split(self, split: Split) -> list[Item]:
        if split not in SPLITS:
            raise DataError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
        self.validate()
        return list(self._load()[split])

    def split_manifest(self) -> dict[str, list[str]]:
        """The item ids of each split, in order (save as ``splits.json`` for reproducibility)."""
        self.validate()
        return {s: [item.id for item in items] for s, items in self._load().items()}

    def bind_judge(self, backend: ModelBackend) -> None:
        """Give a model-graded scorer (``llm_judge``) its model; a no-op for other scorers."""
        self.scorer.bind(backend)

    def prompt(self, item: Item) -> str:
        return render(self.options.prompt, item.input)

    def messages(self, item: Item, skill: str) -> tuple[Message, ...]:
        suffix = self.options.system_suffix
        system = "\n\n".join(p for p in (skill.strip() and skill, suffix) if p)
        msgs = [Message("system", system)] if system.strip() else []
        return (*msgs, Message("user", self.prompt(item)))

    def score(self, output: str, item: Item) -> Score:
        return self.scorer.score(output, item)

    async def ascore(self, output: str, item: Item) -> Score:
        return await self.scorer.ascore(output, item)


__all__ = ["DataOptions", "DataTask"]
