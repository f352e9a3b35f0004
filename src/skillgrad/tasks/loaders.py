"""Reading dataset files (JSONL, CSV, JSON list) into rows that remember their file and line,
collecting every problem instead of stopping at the first, and filling prompt templates with
dotted field paths (``{meta.source}``, ``{choices.0}``).
"""

from __future__ import annotations

import csv
import io
import json
import random
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import skillgrad.safeparse as safeparse
from skillgrad.errors import ConfigError, DataError
from skillgrad.runs.io import jsonl_lines
from skillgrad.skill.text import valid_data
from skillgrad.tasks.base import SPLITS, Split

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".json": "json"}


@dataclass(frozen=True)
class Row:
    """One record of a dataset file; ``line`` is 1-based (CSV: the line the record starts on)."""

    file: str
    line: int
    data: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"


class Problems:
    """Collects data problems; ``raise_if_any`` turns them into one DataError."""

    def __init__(self, limit: int = 20) -> None:
        self.limit, self.items, self.count = limit, list[str](), 0

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.items) < self.limit:
            self.items.append(message)

    def raise_if_any(self, header: str) -> None:
        if not self.count:
            return
        lines = [f"{header}: {self.count} problem(s); nothing was sent to a model."]
        lines += [f"  - {p}" for p in self.items]
        if self.count > len(self.items):
            lines.append(f"  ... and {self.count - len(self.items)} more")
        raise DataError("\n".join(lines))


def file_format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"unsupported data file {path}: use one of {', '.join(sorted(FORMATS))} (by extension)"
        )
    return fmt


def read_rows(path: Path, shown: str, problems: Problems) -> list[Row]:
    """All object rows of one file; unreadable rows become problems, not exceptions."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        problems.add(f"{shown}: cannot read: {exc.strerror or exc}")
        return []
    except UnicodeDecodeError as exc:
        problems.add(f"{shown}: not UTF-8 text (byte {exc.start}): re-save it as UTF-8")
        return []
    reader = {"jsonl": _read_jsonl, "csv": _read_csv, "json": _read_json}[file_format(path)]
    return reader(text, shown, problems)


def _object(value: Any, shown: str, line: int, problems: Problems) -> Row | None:
    if isinstance(value, dict):  # a JSON escape such as "\udce9" decodes to a lone surrogate
        return Row(shown, line, valid_data(value))
    problems.add(f"{shown} line {line}: expected a JSON object, got {type(value).__name__}")
    return None


def _read_jsonl(text: str, shown: str, problems: Problems) -> list[Row]:
    rows = []
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            value = safeparse.loads(line, max_chars=None)
        except json.JSONDecodeError as exc:  # also nested too deep (safeparse.JSONBoundError)
            problems.add(f"{shown} line {number}: bad JSON: {exc.msg} (column {exc.colno})")
            continue
        row = _object(value, shown, number, problems)
        if row is not None:
            rows.append(row)
    return rows


def _read_csv(text: str, shown: str, problems: Problems) -> list[Row]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[Row] = []
    try:
        header = next(reader, None)
    except csv.Error as exc:
        problems.add(f"{shown} line 1: bad CSV header: {exc}")
        return rows
    if not header:
        return rows
    header = [h.strip() for h in header]
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.add(f"{shown} line {start}: bad CSV: {exc}")
            break  # the reader cannot resynchronise after a broken quote
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(header):
            problems.add(
                f"{shown} line {start}: expected {len(header)} columns "
                f"({', '.join(header)}), got {len(record)}"
            )
            continue
        rows.append(Row(shown, start, dict(zip(header, record, strict=True))))
    return rows


def _read_json(text: str, shown: str, problems: Problems) -> list[Row]:
    try:
        data = safeparse.loads(text, max_chars=None)
    except json.JSONDecodeError as exc:  # also nested too deep (safeparse.JSONBoundError)
        problems.add(f"{shown} line {exc.lineno}: bad JSON: {exc.msg} (column {exc.colno})")
        return []
    if not isinstance(data, list):
        problems.add(f"{shown} line 1: expected a JSON list of objects, got {type(data).__name__}")
        return []
    # Re-decode element by element to learn the line each object starts on.
    decoder, rows, pos = json.JSONDecoder(), [], text.index("[") + 1
    for _ in data:
        while text[pos] in " \t\r\n,":
            pos += 1
        value, end = decoder.raw_decode(text, pos)
        row = _object(value, shown, text.count("\n", 0, pos) + 1, problems)
        if row is not None:
            rows.append(row)
        pos = end
    return rows


def split_files(
    root: Path, split: str, problems: Problems, shown: Callable[[Path], str]
) -> list[Path]:
    """The files of one split under ``root``: folder ``root/split/`` (every data file in it) or a
    single ``root/split.<ext>``. A missing or ambiguous split is a problem and yields []."""
    folder = root / split
    if folder.is_dir():
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in FORMATS)
        if not files:
            problems.add(f"split folder {shown(folder)}/ has no {'/'.join(FORMATS)} file")
        return files
    files = [root / f"{split}{ext}" for ext in FORMATS if (root / f"{split}{ext}").is_file()]
    if not files:
        names = ", ".join(f"{split}{ext}" for ext in FORMATS)
        problems.add(
            f"missing split {split!r}: expected folder {shown(folder)}/ or a file "
            f"{names} in {shown(root) or '.'}"
        )
    elif len(files) > 1:
        problems.add(f"split {split!r} is ambiguous: {', '.join(map(shown, files))}")
        return []
    return files


def ratio_split(rows: list[Row], ratios: Mapping[Split, float], seed: int) -> dict[str, list[Row]]:
    """Shuffle with ``seed`` and cut into train/val/test by ``ratios`` (normalised to sum 1);
    the same rows, ratios and seed always give the same split."""
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)
    total = sum(ratios.get(s, 0.0) for s in SPLITS)
    n = len(shuffled)
    n_val = round(n * ratios.get("val", 0.0) / total)
    n_test = min(n - n_val, round(n * ratios.get("test", 0.0) / total))
    n_train = n - n_val - n_test
    return {
        "train": shuffled[:n_train],
        "val": shuffled[n_train : n_train + n_val],
        "test": shuffled[n_train + n_val :],
    }


def get_field(data: Any, path: str) -> tuple[bool, Any]:
    """Look up a dotted path (``a.b``, ``choices.0``) in nested dicts/lists."""
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return False, None
    return True, data


def template_fields(template: str) -> list[str]:
    """The field paths a prompt template uses; a malformed template is a ConfigError."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(f"prompt template {template!r} is malformed: {exc}") from exc
    fields = []
    for _, name, _, _ in parsed:
        if name is None:
            continue
        if not name or name.isdigit():
            raise ConfigError(
                f"prompt template {template!r} has a positional field '{{{name}}}': "
                "name the data field, e.g. {question}"
            )
        fields.append(name.replace("[", ".").replace("]", ""))
    return fields


def _format_value(value: Any, spec: str, conversion: str | None) -> str:
    if spec in ("letters", "lines") and isinstance(value, (list, dict)):
        if isinstance(value, dict):
            pairs = [(str(k), v) for k, v in value.items()]
        else:
            pairs = [(chr(ord("A") + i), v) for i, v in enumerate(value)]
        if spec == "lines":
            return "\n".join(str(v) for _, v in pairs)
        return "\n".join(f"{k}. {v}" for k, v in pairs)
    if conversion == "r":
        value = repr(value)
    elif conversion == "a":
        value = ascii(value)
    elif isinstance(value, (dict, list)):
        value = json.dumps(value, ensure_ascii=False)
    elif conversion == "s":
        value = str(value)
    return format(value, spec)


def render(template: str, data: Any) -> str:
    """Fill ``template`` from ``data``. ``{options:letters}`` lists a list/dict as "A. ..." lines,
    ``{options:lines}`` one per line; lists and dicts otherwise render as JSON."""
    out = []
    for literal, name, spec, conversion in string.Formatter().parse(template):
        out.append(literal)
        if name is None:
            continue
        found, value = get_field(data, name.replace("[", ".").replace("]", ""))
        if not found:
            raise DataError(f"prompt field {name!r} is missing from the item's input")
        try:
            out.append(_format_value(value, spec or "", conversion))
        except (ValueError, TypeError) as exc:
            raise DataError(f"prompt field {name!r}: cannot format {value!r}: {exc}") from exc
    return "".join(out)


__all__ = [
    "FORMATS",
    "Problems",
    "Row",
    "file_format",
    "get_field",
    "ratio_split",
    "read_rows",
    "render",
    "split_files",
    "template_fields",
]
