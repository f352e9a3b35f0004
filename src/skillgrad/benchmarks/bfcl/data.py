"""BFCL's single-turn Python categories, read from the pinned ``bfcl-eval`` wheel's data files.

The data bundle ``bfcl`` (registered under ``skillgrad.data``) is 19 files of ``bfcl-eval``
2026.3.23 (Apache-2.0, Berkeley Gorilla team): ``BFCL_v4_<category>.json`` (one question per
line: id, chat messages, function docs) and, for the categories that have gold calls,
``possible_answer/BFCL_v4_<category>.json``. Pulled by ``skillgrad data pull bfcl``; every file
is checked against its SHA-256 (``DataBundle.verify``) before any is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.assets import PinnedWheel
from skillgrad.benchmarks.bfcl.score import Kind
from skillgrad.benchmarks.bundles import BundleFile, DataBundle
from skillgrad.errors import ConfigError, DataError

# SHA-256 of each file, by category file stem: questions, then gold answers
_QUESTIONS = {
    "simple_python": "82dd63ba502eb2520c6b5d1d9a5c4b590e03ff261565175561f6228a367d1991",
    "multiple": "aef168155ebd74b7ac2401198b201343bc7d16d7a3d7e0d4e6d8ee82c6969b2a",
    "parallel": "19f51a82eff42e5d62541aa500115a056eb78f437c2ba1f10415fd7c8e5dda84",
    "parallel_multiple": "8863ea8433239f55c5f016154cf0830853c89f693c6ea270396a2fa121960579",
    "irrelevance": "2b6ed4c2e992cdcf5f1678a701851f944bef7550ee026ed1ddb89efed5be01a6",
    "live_simple": "1af2ac87dca47556db7b7e37e51e28b459a38b594e3c7b3c792b4903598ca0c4",
    "live_multiple": "fd8ccfad4d911420d0e3341dbe2fff77d1d341da934248b9bb2bda24ab3a10c8",
    "live_parallel": "6c26e9fdc3350cf596e6d1ea9c179cbff834761bccf562f4141ed29a839ca421",
    "live_parallel_multiple": "21d4b9319c1faac431e22757b367ea28917fe467364c3a4b17f16ec06d4f6e79",
    "live_irrelevance": "6559fda2beaceb609a2cd2e504c65b4a56cb448e1ef88fddfd199e163d163349",
    "live_relevance": "e03f9e241657a137cba48a89ee12f47bf3fcb7e4f6274263e9c699a0c974203a",
}
_ANSWERS = {
    "simple_python": "90cd5bc653690ee8e459b5b3f3fc9458606f7f3fcbf795bb51b7dc581f8c86dc",
    "multiple": "244e00ce9395df948bcafc7bee64e8f9c87ef70887587d83cae45b13699f3047",
    "parallel": "8a6aa19c1adddc6a5a2f7e40f9dbf30cc7e95815e7b830c90589ab318229e0f0",
    "parallel_multiple": "5ebf24f458c1f16300c05505d83d6f0a1b68b79be273a033febd0d4f840507e3",
    "live_simple": "fec9cfa9744a936f9126981e85a2023da1e63e273eafebc81923a1162fad70ce",
    "live_multiple": "97e90d59c5bd76c55a2920ce93e5566e9046307d3f558578f085f9d3a56c3084",
    "live_parallel": "8a9f189ff0e832ebbbbdade1fd95a7dbcc67406e9177df3f0aad76f59ab00350",
    "live_parallel_multiple": "f5b5f360556c5feb51db46fb9f56ee4b304f4b45b161599bbb14161c98a2873f",
}
_FILES = {f"BFCL_v4_{k}.json": v for k, v in _QUESTIONS.items()} | {
    f"possible_answer/BFCL_v4_{k}.json": v for k, v in _ANSWERS.items()
}
_WHEEL = PinnedWheel(
    "bfcl-eval", "2026.3.23", "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
)

BUNDLE = DataBundle(
    name="bfcl",
    version="2026.3.23",
    summary="wheel bfcl-eval 2026.3.23 from the package index, 1.9 MB",
    license="Apache-2.0",
    files=tuple(
        BundleFile(_WHEEL, f"bfcl_eval/data/{path}", path, digest)
        for path, digest in _FILES.items()
    ),
)

# category -> (file stem after BFCL_v4_, kind). BFCL v4 calls ``simple`` ``simple_python``.
CATEGORIES: dict[str, tuple[str, Kind]] = {
    "simple": ("simple_python", "calls"),
    "multiple": ("multiple", "calls"),
    "parallel": ("parallel", "calls"),
    "parallel_multiple": ("parallel_multiple", "calls"),
    "irrelevance": ("irrelevance", "no_call"),
    "live_simple": ("live_simple", "calls"),
    "live_multiple": ("live_multiple", "calls"),
    "live_parallel": ("live_parallel", "calls"),
    "live_parallel_multiple": ("live_parallel_multiple", "calls"),
    "live_irrelevance": ("live_irrelevance", "no_call"),
    "live_relevance": ("live_relevance", "any_call"),
}
ALIASES = {"simple_python": "simple"}
# Items whose gold answer no call can satisfy under BFCL's own rules (every model scores 0 on
# them); left out of the splits. The tests check that exactly these fail our own checker.
UNSATISFIABLE = {
    "live_simple_106-63-0": "required `auto_loan_payment_start` and `bank_hours_start` have no "
    "possible value",
    "live_simple_112-68-0": "required `acc_routing_start` (and four more) have no possible value",
    "live_multiple_507-149-4": "required `origin_airport` may only be left out",
    "live_multiple_862-181-3": "the gold call needs `journey_start_time`, which "
    "Trains_1_FindTrains does not document",
    "live_multiple_964-207-0": "transfer_to_human_agent requires `statement`; the gold call "
    "gives `question` instead",
}


@dataclass(frozen=True)
class Entry:
    """One BFCL question: chat messages, function docs, expected calls (None: no gold)."""

    id: str
    messages: list[dict[str, str]]
    functions: list[dict[str, Any]]
    gold: list[dict[str, dict[str, list[Any]]]] | None


def category_of(name: str) -> tuple[str, str, Kind]:
    """(category, file stem, kind) of a category name or alias; unknown: ``ConfigError``."""
    canonical = ALIASES.get(name, name)
    if canonical not in CATEGORIES:
        raise ConfigError(
            f"bfcl: unknown category {name!r}; supported: {', '.join(CATEGORIES)} "
            "(multi-turn, memory, web search and the Java / JavaScript categories are not)"
        )
    stem, kind = CATEGORIES[canonical]
    return canonical, stem, kind


def read_entries(category: str, *, unsatisfiable: bool = False) -> list[Entry]:
    """Every entry of ``category`` in file order, gold attached; those in ``UNSATISFIABLE``
    only when ``unsatisfiable`` is set (the tests check that no answer can pass them)."""
    _, stem, kind = category_of(category)
    root = BUNDLE.verify()  # a missing or changed file stops here, naming the pull command
    rows = _json_lines(root / f"BFCL_v4_{stem}.json")
    gold: dict[str, Any] = {}
    if kind == "calls":
        answers = root / f"possible_answer/BFCL_v4_{stem}.json"
        gold = {str(row["id"]): row["ground_truth"] for _, row in _json_lines(answers)}
    entries = []
    for (path, line), row in rows:
        try:
            entry = Entry(str(row["id"]), list(row["question"][0]), list(row["function"]), None)
            if kind == "calls":
                entry = Entry(entry.id, entry.messages, entry.functions, gold[entry.id])
                _check_gold(entry)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise DataError(f"{path} line {line}: not a BFCL question ({exc!r})") from exc
        if unsatisfiable or entry.id not in UNSATISFIABLE:
            entries.append(entry)
    return entries


def _check_gold(entry: Entry) -> None:
    documented = {f["name"] for f in entry.functions}
    for call in entry.gold or []:
        for name, params in call.items():
            if name not in documented or not isinstance(params, dict):
                raise ValueError(f"expected call {name!r} is not among the item's functions")


def _json_lines(path: Path) -> list[tuple[tuple[Path, int], dict[str, Any]]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                out.append(((path, n), json.loads(text)))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path} line {n}: bad JSON ({exc.msg})") from exc
    return out


__all__ = [
    "ALIASES",
    "BUNDLE",
    "CATEGORIES",
    "UNSATISFIABLE",
    "Entry",
    "category_of",
    "read_entries",
]
