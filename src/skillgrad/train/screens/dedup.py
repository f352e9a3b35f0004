"""Never a duplicate, never a silent contradiction: edits checked against the skill itself.

Aggregation merges the step's own proposals; this module checks each one against the lines the
skill already has (and the step's edits kept before it). Measured: a step accepted the
same format rule in two phrasings, and the next one replaced a rule with a copy of a line the
skill already held. So an edit whose text is an exact or near-duplicate of a skill line (or of an
earlier kept edit) is dropped, and the line it repeats is reported: the rule is in the skill and
the target still fails, which is what sends reflection to revise mode (``train/revise.py``).

A contradiction is a pair of rules saying the same thing once affirmed and once negated
(``aggregate.is_conflict``): a new rule contradicting a skill line is held back for review
like a step's own conflicts, and contradictions already inside the skill are found for the
revise prompt.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skillgrad.runs.records import Conflict
from skillgrad.skill.text import FUNCTION_WORDS
from skillgrad.train.aggregate import CONFLICT_SIMILARITY, is_conflict, polarity_free, similarity
from skillgrad.train.examples import example_lines
from skillgrad.train.rules import rule_key
from skillgrad.types import Edit

DUPLICATE_SIMILARITY = 0.85
_WORD = re.compile(r"[a-z0-9']+")
_MARKUP = re.compile(r"^\s*(#|```|~~~|<!--|\|)")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


_GENERIC = frozenset(
    "always carefully closely fully properly thoroughly first every each time please make sure "
    "answer answers answering reply replies replying respond responding response responses "
    "task tasks question questions given".split()
)
"""Words that add no instruction to a rule: "Read the instruction carefully before answering"
says what "Read the instruction carefully" says (measured: a skill held both lines)."""
_MIN_CONTENT = 2


def _content(text: str) -> frozenset[str]:
    return frozenset(_words(text) - FUNCTION_WORDS)


def same_rule_padded(a: str, b: str) -> bool:
    """Whether one rule is the other plus only generic words (``_GENERIC``): the content words
    of the shorter are all in the longer, and what the longer adds tells the model nothing
    new. A rule adding a real instruction ("... in uppercase"), a negation or a condition is a
    different rule."""
    ca, cb = _content(a), _content(b)
    small, large = (ca, cb) if len(ca) <= len(cb) else (cb, ca)
    if len(small) < _MIN_CONTENT or not small <= large:
        return False
    return large - small <= _GENERIC


def near_duplicate(text: str, lines: Sequence[str], threshold: float) -> str | None:
    """The first of ``lines`` that ``text`` repeats: the same rule once list markers, case,
    spacing and closing punctuation are ignored, a text similarity (characters, or the set
    of words: a reordered phrasing) of at least ``threshold``, or the same rule padded with
    generic words either way (``same_rule_padded``); None when it repeats none."""
    key, ws = rule_key(text), _words(text)
    if not key:
        return None
    for line in lines:
        other = rule_key(line)
        if not other:
            continue
        if other == key or similarity(text, line) >= threshold:
            return line
        ow = ws | _words(line)
        if len(ws) >= 3 and ow and len(ws & _words(line)) / len(ow) >= threshold:
            return line
        if same_rule_padded(text, line):
            return line
    return None


def edit_key(edit: Edit) -> str:
    """What makes two edits the same attempt (op, the line it rewrites, the new text); an
    example is its train item (``TrainState.tried``)."""
    if edit.source == "example" and edit.trajectory_ids:
        return "example|" + edit.trajectory_ids[0].split("/", 1)[-1]
    return f"{edit.op}|{rule_key(edit.anchor)}|{rule_key(edit.content)}"


def skill_lines(skill: str) -> list[str]:
    """The skill's text lines that could be rules (no headings, fences, comments, tables, and
    no line of a worked example)."""
    shown = example_lines(skill)
    return [
        x.strip()
        for x in skill.split("\n")
        if x.strip() and not _MARKUP.match(x) and x.strip() not in shown
    ]


def _as_rule(line: str) -> Edit:
    return Edit(op="add", section="", content=line, source="skill")


def skill_contradictions(skill: str) -> list[tuple[str, str]]:
    """Pairs of the skill's own lines that contradict each other (one affirmed, one negated,
    ``aggregate.is_conflict``), in line order. Near-linear in the skill's lines: only lines of
    opposite polarity that share a content word are compared (a pair at the conflict
    similarity differs by a word or two, so they share at least half of their content words);
    a line without one is compared with every line of the other polarity. At most
    ``MAX_CONTRADICTIONS`` pairs. Cached per text: a step asks up to three times."""
    return list(_contradictions(skill))


MAX_CONTRADICTIONS = 100
"""The scan stops once it has found this many pairs (those of the earliest lines): more is
no list a revision can work through, and a skill of many copies of a few rules, each copy
contradicting the others, would otherwise cost time quadratic in its lines."""

_STOP = frozenset(
    "a an and are as at be by do for from if in is it of on or so than that the then this to "
    "with your you its".split()
)


def _keys(free: str) -> frozenset[str]:
    """A line's content words (3+ letters, not a stop word), by their first five letters: a
    plural or other ending does not hide a shared word."""
    return frozenset(w[:5] for w in free.split() if len(w) >= 3 and w not in _STOP)


@functools.lru_cache(maxsize=8)
def _contradictions(skill: str) -> tuple[tuple[str, str], ...]:
    lines = skill_lines(skill)
    parsed = [polarity_free(x) for x in lines]
    keys = [_keys(free) for free, _ in parsed]
    index: dict[tuple[bool, str], list[int]] = {}
    found: list[tuple[int, int]] = []
    for j, (free, negs) in enumerate(parsed):
        negated = negs > 0
        shared = Counter(i for k in keys[j] for i in index.get((not negated, k), ()))
        shared.update(index.get((not negated, ""), ()))  # earlier lines without a key
        if not keys[j]:  # nothing to index it by: every earlier line of the other polarity
            shared.update(i for i, (_, n) in enumerate(parsed[:j]) if (n > 0) != negated)
        ids = sorted(i for i, n in shared.items() if n >= _needed(keys[i], keys[j]))
        found += [(i, j) for i in _opposed([parsed[i][0] for i in ids], ids, free)]
        if len(found) >= MAX_CONTRADICTIONS:  # a skill at war with itself: enough to review
            break
        for k in keys[j] or {""}:
            index.setdefault((negated, k), []).append(j)
    return tuple((lines[i], lines[j]) for i, j in sorted(found)[:MAX_CONTRADICTIONS])


def _needed(a: frozenset[str], b: frozenset[str]) -> int:
    """Content words two lines must share to be compared: half of the smaller set's (a pair
    at the conflict similarity differs by a word or two); one when either has none."""
    return max(1, min(len(a), len(b)) // 2) if a and b else 0


def _opposed(texts: list[str], ids: list[int], later: str) -> list[int]:
    """Which of ``texts`` (earlier lines of the other polarity, their ``ids``) contradict
    ``later``: ``is_conflict``'s similarity, its cheap upper bounds first (the lengths, then
    the characters), one matcher per later line (it indexes ``later`` once)."""
    matcher = difflib.SequenceMatcher(None, "", later)
    out = []
    for i, text in zip(ids, texts, strict=True):
        # difflib's own upper bound by the lengths (real_quick_ratio), in its arithmetic
        bound = 2.0 * min(len(text), len(later)) / (len(text) + len(later) or 1)
        if not text or bound < CONFLICT_SIMILARITY:
            continue
        matcher.set_seq1(text)
        if matcher.quick_ratio() >= CONFLICT_SIMILARITY and matcher.ratio() >= CONFLICT_SIMILARITY:
            out.append(i)
    return out


@dataclass
class Screened:
    """Edits after the check against the skill: ``kept``; ``dropped`` (edit, reason);
    ``repeated``: the skill lines some proposal repeated; ``conflicts`` held back for review."""

    kept: list[Edit] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


def screen(edits: Sequence[Edit], skill: str, *, step: int, threshold: float) -> Screened:
    """Drop each edit whose new text repeats a skill line (other than the one it rewrites) or a
    kept edit's text; hold back an added rule that contradicts a skill line."""
    out = Screened()
    lines = skill_lines(skill)
    for edit in edits:
        if edit.op not in ("add", "replace", "insert_after") or edit.source == "example":
            out.kept.append(edit)
            continue
        others = [x for x in lines if not edit.anchor or rule_key(x) != rule_key(edit.anchor)]
        taken = [e.content for e in out.kept if e.op != "delete"]
        new = [x for x in edit.content.split("\n") if x.strip()]
        if edit.op == "replace" and rule_key(edit.content) == rule_key(edit.anchor):
            out.dropped.append({"edit": edit, "reason": "unchanged: rewrites a line as itself"})
            out.repeated.append(edit.anchor)
            continue
        hit = next((h for x in new if (h := near_duplicate(x, others, threshold))), None)
        if hit is not None:
            out.dropped.append({"edit": edit, "reason": f"already in the skill: {hit[:120]!r}"})
            out.repeated.append(hit)
            continue
        if any(near_duplicate(x, taken, threshold) for x in new):
            out.dropped.append({"edit": edit, "reason": "repeats an edit kept this step"})
            continue
        bare = replace(edit, section="", file="")
        against = next((x for x in others if is_conflict(_as_rule(x), bare)), None)
        if edit.op == "add" and against is not None:
            out.conflicts.append(
                Conflict(step, (_as_rule(against), edit), "contradicts a rule in the skill")
            )
            out.dropped.append({"edit": edit, "reason": "contradicts a rule in the skill"})
            continue
        out.kept.append(edit)
    return out


__all__ = [
    "DUPLICATE_SIMILARITY",
    "MAX_CONTRADICTIONS",
    "Screened",
    "edit_key",
    "near_duplicate",
    "same_rule_padded",
    "screen",
    "skill_contradictions",
    "skill_lines",
]
