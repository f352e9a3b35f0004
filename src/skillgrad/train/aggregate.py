"""Aggregate (gradient aggregation): merge edits that say the same thing; hold back conflicts.

This is the lexical pass; ``train/merge.py`` is the semantic pass that follows it.

Near-duplicates (same op, same section, lexically similar text) merge into one edit whose
``support`` is the number of proposals merged into it (each reflection call sees its own
minibatch, so independent calls agreeing is the signal; counting trajectories instead made every
edit of a deep reflection, which sees all failures, look as strong as the agreement of every
minibatch) and whose trajectory ids are the union. Conflicts — two
edits changing the same rule in opposite directions — are never applied: both go to
``conflicts.json`` for human review.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skillgrad.runs.records import Conflict
from skillgrad.types import Edit

_NEGATIONS = {"not", "never", "no", "don't", "dont", "do not", "avoid", "without", "nor"}
_WORD = re.compile(r"[a-z0-9']+")


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _section(edit: Edit) -> str:
    """The edit's section leaf, prefixed by its file for a non-default file of a package."""
    leaf = _norm(edit.section.split(">")[-1])
    return f"{edit.file}:{leaf}" if edit.file else leaf


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, _norm(a), _norm(b)).ratio()


CONFLICT_SIMILARITY = 0.8
"""Two statements of opposite polarity at least this similar (their words, negations left out,
compared as characters) contradict each other."""


def polarity_free(text: str) -> tuple[str, int]:
    """``text``'s words without its negations, and how many negations it had."""
    words = _WORD.findall(text.lower())
    negs = sum(1 for w in words if w in _NEGATIONS)
    return " ".join(w for w in words if w not in _NEGATIONS), negs


def is_conflict(a: Edit, b: Edit) -> bool:
    """Opposite changes to the same rule: same anchor with different outcomes, or the same
    statement once affirmed and once negated."""
    if _section(a) != _section(b):
        return False
    if a.anchor and b.anchor and _norm(a.anchor) == _norm(b.anchor):
        anchored = {"replace", "delete"}
        if a.op in anchored and b.op in anchored:
            return a.op != b.op or similarity(a.content, b.content) < 0.8
    if a.content and b.content:
        (ta, na), (tb, nb) = polarity_free(a.content), polarity_free(b.content)
        if (na > 0) != (nb > 0) and ta:
            return difflib.SequenceMatcher(None, ta, tb).ratio() >= CONFLICT_SIMILARITY
    return False


def is_duplicate(a: Edit, b: Edit, threshold: float) -> bool:
    if a.op != b.op or _section(a) != _section(b) or is_conflict(a, b):
        return False
    if _norm(a.anchor) != _norm(b.anchor) and a.op != "add":
        return False
    return similarity(a.content, b.content) >= threshold


@dataclass
class Aggregated:
    edits: list[Edit] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    merges: list[dict[str, Any]] = field(default_factory=list)
    semantic: list[dict[str, Any]] = field(default_factory=list)  # see train/merge.py


def aggregate(edits: Sequence[Edit], threshold: float, *, step: int) -> Aggregated:
    """Merge near-duplicates (first occurrence's text is kept), then remove conflicting pairs
    (recorded as ``Conflict``s of ``step``)."""
    out = Aggregated()
    for edit in edits:
        for i, kept in enumerate(out.edits):
            if is_duplicate(kept, edit, threshold):
                ids = tuple(dict.fromkeys((*kept.trajectory_ids, *edit.trajectory_ids)))
                out.edits[i] = replace(
                    kept, support=kept.support + edit.support, trajectory_ids=ids
                )
                out.merges.append({"into": i, "merged": edit})
                break
        else:
            out.edits.append(edit)
    bad: set[int] = set()
    for i, a in enumerate(out.edits):
        for j in range(i + 1, len(out.edits)):
            if is_conflict(a, out.edits[j]):
                out.conflicts.append(Conflict(step, (a, out.edits[j]), "opposite changes"))
                bad.update((i, j))
    out.edits = [e for i, e in enumerate(out.edits) if i not in bad]
    return out


__all__ = [
    "CONFLICT_SIMILARITY",
    "Aggregated",
    "aggregate",
    "is_conflict",
    "is_duplicate",
    "polarity_free",
    "similarity",
]
