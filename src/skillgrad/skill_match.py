"""Skill document structure (sections, protected blocks) and tolerant matching for edits.

Optimizer models quote the document imperfectly. These pure functions find what an edit meant —
exact first, then whitespace-normalised, case-insensitive, and fuzzy — and say how they matched,
so the update report shows every liberty taken. ``skill.Skill`` is the public face.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from skillgrad.errors import SkillError

FUZZY_THRESHOLD = 0.85
# Below this length a fuzzy match is mostly noise ("use ISO" ~ "use UTC"), so only the exact,
# whitespace and case stages apply to short anchors.
MIN_FUZZY_CHARS = 12
# Two fuzzy candidates this close in ratio are indistinguishable: the anchor is ambiguous.
FUZZY_TIE = 0.02

Span = tuple[int, int]
_PUNCT = ".,;:!?"


@dataclass(frozen=True)
class Blocked:
    """A region normal edits may not touch (a protected block, markers included)."""

    name: str
    span: Span


@dataclass(frozen=True)
class AnchorMatch:
    start: int
    end: int
    how: str  # "exact" | "whitespace-normalised" | "case-insensitive" | "fuzzy 0.91"


@dataclass(frozen=True)
class AnchorMiss:
    kind: Literal["not_found", "ambiguous", "protected"]
    reason: str


def normalise(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def _overlaps(span: Span, other: Span) -> bool:
    return span[0] < other[1] and other[0] < span[1]


def _blocker(span: Span, blocked: Sequence[Blocked]) -> str | None:
    return next((b.name for b in blocked if _overlaps(span, b.span)), None)


def _decide(spans: list[Span], how: str, blocked: Sequence[Blocked]) -> AnchorMatch | AnchorMiss:
    free = [s for s in spans if _blocker(s, blocked) is None]
    if len(free) == 1:
        return AnchorMatch(free[0][0], free[0][1], how)
    if len(free) > 1:
        return AnchorMiss("ambiguous", f"ambiguous anchor ({len(free)} matches)")
    return AnchorMiss("protected", f"protected block {_blocker(spans[0], blocked)}")


def _exact_spans(text: str, anchor: str, scope: Span) -> list[Span]:
    spans: list[Span] = []
    at = text.find(anchor, scope[0], scope[1])
    while at != -1:
        spans.append((at, at + len(anchor)))
        at = text.find(anchor, at + len(anchor), scope[1])
    return spans


def _regex_spans(text: str, anchor: str, scope: Span, flags: int) -> list[Span]:
    pattern = re.compile(r"\s+".join(re.escape(tok) for tok in anchor.split()), flags)
    return [m.span() for m in pattern.finditer(text, scope[0], scope[1])]


def _line_spans(text: str, scope: Span) -> list[Span]:
    """Spans of the non-blank lines in scope, trimmed of surrounding whitespace."""
    spans = []
    for m in re.finditer(r"[^\n]+", text[scope[0] : scope[1]]):
        body = m.group()
        if body.strip():
            lead = len(body) - len(body.lstrip())
            start = scope[0] + m.start() + lead
            spans.append((start, start + len(body.strip())))
    return spans


def _fuzzy_candidates(text: str, anchor: str, scope: Span) -> list[Span]:
    """Windows of whole lines with about as many lines as the anchor; for a one-line anchor also
    runs of words inside each line with about as many words (anchors often quote half a line)."""
    lines = _line_spans(text, scope)
    n_lines = max(1, len([ln for ln in anchor.splitlines() if ln.strip()]))
    out: list[Span] = []
    for size in range(max(1, n_lines - 1), n_lines + 2):
        out.extend((lines[i][0], lines[i + size - 1][1]) for i in range(len(lines) - size + 1))
    if n_lines == 1:
        n_words = len(anchor.split())
        # A quote of half a sentence rarely carries the sentence's final punctuation.
        trim = anchor.rstrip()[-1:] not in _PUNCT
        for line in lines:
            words = [m.span() for m in re.finditer(r"\S+", text[line[0] : line[1]])]
            for size in range(max(1, n_words - 2), min(len(words), n_words + 2) + 1):
                for i in range(len(words) - size + 1):
                    start, end = line[0] + words[i][0], line[0] + words[i + size - 1][1]
                    out.append((start, end))
                    if trim and text[end - 1] in _PUNCT and end - 1 > start:
                        out.append((start, end - 1))
    return sorted(set(out))


def _fuzzy(
    text: str, anchor: str, scope: Span, blocked: Sequence[Blocked]
) -> AnchorMatch | AnchorMiss | None:
    target = normalise(anchor).lower()
    if len(target) < MIN_FUZZY_CHARS:
        return None
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)  # SequenceMatcher caches its analysis of seq2: set it once
    scored: list[tuple[float, Span]] = []
    for span in _fuzzy_candidates(text, anchor, scope):
        matcher.set_seq1(normalise(text[span[0] : span[1]]).lower())
        if matcher.real_quick_ratio() < FUZZY_THRESHOLD or matcher.quick_ratio() < FUZZY_THRESHOLD:
            continue
        ratio = matcher.ratio()
        if ratio >= FUZZY_THRESHOLD:
            scored.append((ratio, span))
    if not scored:
        return None
    best_ratio, best = max(scored, key=lambda rs: (rs[0], -(rs[1][1] - rs[1][0])))
    name = _blocker(best, blocked)
    if name is not None:
        return AnchorMiss("protected", f"protected block {name}")
    rivals = {
        s
        for r, s in scored
        if r >= best_ratio - FUZZY_TIE and not _overlaps(s, best) and _blocker(s, blocked) is None
    }
    if rivals:
        return AnchorMiss("ambiguous", f"ambiguous anchor ({len(rivals) + 1} fuzzy matches)")
    return AnchorMatch(best[0], best[1], f"fuzzy {best_ratio:.2f}")


def find_anchor(
    text: str, anchor: str, scope: Span, blocked: Sequence[Blocked] = ()
) -> AnchorMatch | AnchorMiss:
    """Find ``anchor`` in ``text[scope]``: exact, whitespace-normalised, case-insensitive, fuzzy.

    The first stage with any match decides. Matches overlapping a ``blocked`` region are not
    usable; if they were the only ones, the miss says which protected block stopped the edit.
    """
    if not anchor.strip():
        return AnchorMiss("not_found", "empty anchor")
    stages: list[tuple[str, list[Span]]] = [
        ("exact", _exact_spans(text, anchor, scope)),
        ("whitespace-normalised", _regex_spans(text, anchor, scope, 0)),
        ("case-insensitive", _regex_spans(text, anchor, scope, re.IGNORECASE)),
    ]
    for how, spans in stages:
        if spans:
            return _decide(spans, how, blocked)
    fuzzy = _fuzzy(text, anchor, scope, blocked)
    return fuzzy if fuzzy is not None else AnchorMiss("not_found", "anchor not found")


def _key(component: str) -> str:
    """Comparison form of a heading: no emphasis marks, trailing colon, case or extra spaces."""
    return normalise(re.sub(r"[*_`]", "", component)).strip(" :").lower()


def _fuzzy_score(query: tuple[str, ...], path: tuple[str, ...]) -> float:
    whole = SequenceMatcher(None, " > ".join(map(_key, query)), " > ".join(map(_key, path)))
    title = SequenceMatcher(None, _key(query[-1]), _key(path[-1]))
    return max(whole.ratio(), title.ratio())


def resolve_path(
    query: tuple[str, ...], paths: Sequence[tuple[str, ...]]
) -> tuple[int, str] | None:
    """Index into ``paths`` of the section ``query`` names, and how it matched.

    Stages: exact path (first wins on duplicates); case/markup-insensitive path; the last
    component alone if exactly one section has that title (or starts with it); fuzzy (ratio
    >= 0.85, unique best). The root ``()`` only matches an empty query.
    """
    if query in paths:
        return paths.index(query), "exact"
    if not query:
        return None
    qkey = tuple(map(_key, query))
    for i, path in enumerate(paths):
        if tuple(map(_key, path)) == qkey:
            return i, "case-insensitive"
    by_title = [i for i, p in enumerate(paths) if p and _key(p[-1]) == qkey[-1]]
    if len(by_title) == 1:
        return by_title[0], "by title"
    # "Output" for "Output format": the query is the first word(s) of exactly one title.
    by_prefix = [i for i, p in enumerate(paths) if p and _key(p[-1]).startswith(qkey[-1] + " ")]
    if len(by_prefix) == 1:
        return by_prefix[0], "by title prefix"
    scored = [(_fuzzy_score(query, p), i) for i, p in enumerate(paths) if p]
    good = sorted((s for s in scored if s[0] >= FUZZY_THRESHOLD), reverse=True)
    if not good or (len(good) > 1 and good[1][0] >= good[0][0] - FUZZY_TIE):
        return None
    return good[0][1], f"fuzzy {good[0][0]:.2f}"


# ---- document structure -------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(\S.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
MARKER = re.compile(r"^\s*<!--\s*(/?)skillgrad:protected\s+([A-Za-z0-9_.-]+)\s*-->\s*$")


@dataclass(frozen=True)
class Section:
    """A heading and what it governs. ``start`` is the heading's line index (0 for the root);
    ``end`` is exclusive and covers the subsections; ``body`` is the section's own text (no
    heading, stopping at ``body_end``: the first child heading)."""

    path: tuple[str, ...]
    level: int
    title: str
    start: int
    end: int
    body: str
    body_end: int

    @property
    def name(self) -> str:
        return format_section_path(self.path)

    @property
    def content_start(self) -> int:
        """First line after the heading (0 for the root, which has none)."""
        return self.start + 1 if self.path else 0


@dataclass(frozen=True)
class Block:
    """A protected block: ``open``/``close`` are the line indices of its two marker lines."""

    name: str
    open: int
    close: int


def parse_section_path(section: str) -> tuple[str, ...]:
    """``"A > B"``, ``"A/B"`` or ``"## B"`` to a heading path; ``""`` is the root ``()``."""
    sep = ">" if ">" in section else "/"
    parts = (normalise(p).lstrip("#").strip() for p in section.split(sep))
    return tuple(p for p in parts if p)


def format_section_path(path: tuple[str, ...]) -> str:
    return " > ".join(path)


def scan(lines: list[str]) -> tuple[list[Section], list[Block]]:
    """Sections and protected blocks of a document split on ``\\n``; fenced code is opaque.

    Raises ``SkillError`` (with the line number and the fix) for unclosed, nested, duplicate
    or unmatched protected-block markers.
    """
    headings: list[tuple[int, int, str]] = []
    blocks: list[Block] = []
    fence = ""
    opened: tuple[str, int] | None = None
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r")
        if fence:
            if re.match(rf"^ {{0,3}}{re.escape(fence)}+[ \t]*$", line):
                fence = ""
            continue
        if m := _FENCE.match(line):
            fence = m.group(1)
        elif m := _HEADING.match(line):
            headings.append((i, len(m.group(1)), m.group(2).strip()))
        elif m := MARKER.match(line):
            opened = _marker(m.group(1) == "/", m.group(2), i, opened, blocks)
    if opened is not None:
        raise SkillError(
            f"protected block {opened[0]!r} opened at line {opened[1] + 1} is never closed; "
            f"add '<!-- /skillgrad:protected {opened[0]} -->' after its content"
        )
    return _sections(lines, headings), blocks


def _marker(
    closing: bool, name: str, i: int, opened: tuple[str, int] | None, blocks: list[Block]
) -> tuple[str, int] | None:
    if not closing:
        if opened is not None:
            raise SkillError(
                f"line {i + 1}: protected block {name!r} opens inside {opened[0]!r} (line "
                f"{opened[1] + 1}); protected blocks cannot nest: close the first one before"
            )
        if any(b.name == name for b in blocks):
            raise SkillError(f"line {i + 1}: a second protected block named {name!r}; rename one")
        return name, i
    if opened is None or opened[0] != name:
        raise SkillError(
            f"line {i + 1}: closing marker of protected block {name!r} without a matching "
            f"'<!-- skillgrad:protected {name} -->' before it; add that opening marker or "
            "delete this line"
        )
    blocks.append(Block(name, opened[1], i))
    return None


def _sections(lines: list[str], headings: list[tuple[int, int, str]]) -> list[Section]:
    n = len(lines)
    first = headings[0][0] if headings else n
    out = [Section((), 0, "", 0, n, "\n".join(lines[:first]), first)]
    stack: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    for k, (i, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        later = headings[k + 1 :]
        end = next((j for j, lv, _ in later if lv <= level), n)
        body_end = later[0][0] if later else n
        body = "\n".join(lines[i + 1 : body_end])
        out.append(Section(tuple(t for _, t in stack), level, title, i, end, body, body_end))
    return out
