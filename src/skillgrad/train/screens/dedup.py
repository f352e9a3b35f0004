"""Never a duplicate, never a silent contradiction: edits checked against the skill itself.

Aggregation merges the step's own proposals; this module checks each one against the lines the
skill already has (and the step's edits kept before it). Measured (issue 26): a step accepted the
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

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skillgrad.runs.records import Conflict
from skillgrad.train.aggregate import is_conflict, similarity
from skillgrad.train.examples import example_lines
from skillgrad.train.rules import rule_key
from skillgrad.types import Edit

DUPLICATE_SIMILARITY = 0.85
_WORD = re.compile(r"[a-z0-9']+")
_MARKUP = re.compile(r"^\s*(#|```|~~~|<!--|\|)")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


_FUNCTION_WORDS = frozenset(
    "a an the and or to of in on at by for with from as is are be it its this that these those "
    "you your yours before after then than so".split()
)
_GENERIC = frozenset(
    "always carefully closely fully properly thoroughly first every each time please make sure "
    "answer answers answering reply replies replying respond responding response responses "
    "task tasks question questions given".split()
)
"""Words that add no instruction to a rule: "Read the instruction carefully before answering"
says what "Read the instruction carefully" says (measured: a skill held both lines)."""
_MIN_CONTENT = 2


def _content(text: str) -> frozenset[str]:
    return frozenset(_words(text) - _FUNCTION_WORDS)


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
    """Pairs of the skill's own lines that contradict each other (one affirmed, one negated)."""
    lines = skill_lines(skill)
    return [
        (a, b)
        for i, a in enumerate(lines)
        for b in lines[i + 1 :]
        if is_conflict(_as_rule(a), _as_rule(b))
    ]


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
    "Screened",
    "edit_key",
    "near_duplicate",
    "same_rule_padded",
    "screen",
    "skill_contradictions",
    "skill_lines",
]
