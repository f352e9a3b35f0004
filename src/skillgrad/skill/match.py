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
from functools import lru_cache
from typing import Literal

from markdown_it import MarkdownIt

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


def squash_spaces(text: str) -> str:
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
    n_lines = max(1, len([ln for ln in anchor.split("\n") if ln.strip()]))
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
    target = squash_spaces(anchor).lower()
    if len(target) < MIN_FUZZY_CHARS:
        return None
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)  # SequenceMatcher caches its analysis of seq2: set it once
    scored: list[tuple[float, Span]] = []
    for span in _fuzzy_candidates(text, anchor, scope):
        matcher.set_seq1(squash_spaces(text[span[0] : span[1]]).lower())
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
    return squash_spaces(re.sub(r"[*_`]", "", component)).strip(" :").lower()


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
#
# Block structure comes from markdown-it-py's CommonMark parser (block rules only), so what is a
# heading agrees with every CommonMark renderer: ATX and setext headings count; lines inside
# fenced or indented code, HTML blocks (a multi-line comment), block quotes and list items are
# not sections. Only top-level headings are sections. Protected-block markers are whole lines
# outside code.

MARKER = re.compile(r"^\s*<!--\s*(/?)skillgrad:protected\s+([A-Za-z0-9_.-]+)\s*-->\s*$")
_MD = MarkdownIt("commonmark").disable(["inline", "text_join"], ignoreInvalid=True)
# HTML block starts that only a closing sequence ends (CommonMark types 1-5), and that closer.
_HTML_CLOSERS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^ {0,3}<!--"), "-->", "HTML comment"),
    (re.compile(r"^ {0,3}<(script|pre|style|textarea)(?:\s|>|$)", re.I), "</{0}>", "<{0}> block"),
    (re.compile(r"^ {0,3}<\?"), "?>", "<? block"),
    (re.compile(r"^ {0,3}<!\[CDATA\["), "]]>", "CDATA block"),
    (re.compile(r"^ {0,3}<![A-Za-z]"), ">", "<! declaration"),
)


@dataclass(frozen=True)
class Section:
    """A heading and what it governs. ``start`` is the heading's first line index (0 for the
    root); ``end`` is exclusive and covers the subsections; ``body`` is the section's own text
    (no heading, stopping at ``body_end``: the first child heading). A setext heading spans
    ``heading_lines`` lines (its text and the ``===`` / ``---`` underline)."""

    path: tuple[str, ...]
    level: int
    title: str
    start: int
    end: int
    body: str
    body_end: int
    heading_lines: int = 1

    @property
    def name(self) -> str:
        return format_section_path(self.path)

    @property
    def content_start(self) -> int:
        """First line after the heading (0 for the root, which has none)."""
        return self.start + self.heading_lines if self.path else 0


@dataclass(frozen=True)
class Block:
    """A protected block: ``open``/``close`` are the line indices of its two marker lines."""

    name: str
    open: int
    close: int


@dataclass(frozen=True)
class Unclosed:
    """A fence or HTML block that runs to the end of the text: it would swallow whatever is
    appended after it. ``closer`` is the line that closes it."""

    what: str
    line: int
    closer: str

    def describe(self) -> str:
        return f"{self.what} opened at line {self.line + 1}"


@dataclass(frozen=True)
class _Structure:
    headings: tuple[tuple[int, int, str, int], ...]  # (line, level, title, lines it spans)
    opaque: frozenset[int]  # lines inside code: never markers
    unclosed: Unclosed | None


def parse_section_path(section: str) -> tuple[str, ...]:
    """``"A > B"``, ``"A/B"`` or ``"## B"`` to a heading path; ``""`` is the root ``()``."""
    sep = ">" if ">" in section else "/"
    parts = (squash_spaces(p).lstrip("#").strip() for p in section.split(sep))
    return tuple(p for p in parts if p)


def format_section_path(path: tuple[str, ...]) -> str:
    return " > ".join(path)


@lru_cache(maxsize=128)
def _structure(text: str) -> _Structure:
    """Top-level headings, code lines and a construct left open at the end, of ``text``."""
    lines = text.split("\n")
    tokens = _MD.parse(text)
    headings: list[tuple[int, int, str, int]] = []
    opaque: set[int] = set()
    unclosed: Unclosed | None = None
    last = len(lines)  # a block ending here runs to the end (trailing blank lines aside)
    while last > 0 and not lines[last - 1].strip():
        last -= 1
    for k, tok in enumerate(tokens):
        if tok.map is None:
            continue
        first, stop = tok.map
        if tok.type == "heading_open" and tok.level == 0:
            title = " ".join(tokens[k + 1].content.split())
            if title:
                headings.append((first, int(tok.tag[1]), title, stop - first))
        elif tok.type in ("fence", "code_block"):
            opaque.update(range(first, stop))
        if tok.level == 0 and stop >= last and tok.type in ("fence", "html_block"):
            unclosed = _left_open(tok.type, lines, first, stop, tok.markup)
    return _Structure(tuple(headings), frozenset(opaque), unclosed)


def _left_open(kind: str, lines: list[str], first: int, stop: int, markup: str) -> Unclosed | None:
    """The fence / HTML block at lines ``first..stop`` (ending the text) if nothing closed it."""
    body = lines[first:stop]
    if kind == "fence":
        indent = len(lines[first]) - len(lines[first].lstrip(" "))
        last = body[-1].strip() if len(body) > 1 else ""
        closed = len(last) >= len(markup) and set(last) == {markup[0]}
        fence = markup[0] * len(markup)
        return None if closed else Unclosed(f"code fence {fence}", first, " " * indent + fence)
    for start, closer, what in _HTML_CLOSERS:
        m = start.match(lines[first])
        if m:
            end = closer.format(m.group(1).lower()) if m.groups() else closer
            text = "\n".join(body)[m.end() :]
            return (
                None
                if end in (text.lower() if m.groups() else text)
                else Unclosed(what.format(*(g.lower() for g in m.groups())), first, end)
            )
    return None


def blocks(text: str) -> list[str]:
    """``text`` split at its blank lines outside code (CommonMark's fenced and indented code,
    ``_structure``), each block stripped, empty ones dropped: a fenced reply with blank lines
    in it stays one block."""
    code = _structure(text).opaque
    out: list[list[str]] = [[]]
    for i, line in enumerate(text.split("\n")):
        if not line.strip() and i not in code:
            out.append([])
        else:
            out[-1].append(line)
    return [b for b in ("\n".join(chunk).strip() for chunk in out) if b]


def open_at_end(text: str) -> Unclosed | None:
    """The code fence or HTML block (comment, ``<pre>``...) that ``text`` leaves open, if any."""
    return _structure(text).unclosed


def make_safe(text: str) -> tuple[str, tuple[str, ...]]:
    """Model text made safe to put into a skill, and what was changed (empty: nothing).

    A fence or HTML block the text opens and never closes would swallow everything after it
    in the document (sections, protected-block markers), so a closing line is appended. Text
    that needs nothing comes back unchanged.
    """
    changes: list[str] = []
    for _ in range(8):  # a closer can reveal another open construct (a fence in a comment)
        left = open_at_end(text)
        if left is None:
            break
        text = text.rstrip("\n") + "\n" + left.closer
        changes.append(f"closed the {left.describe()} with {left.closer.strip()!r}")
    return text, tuple(changes)


def scan(lines: list[str]) -> tuple[list[Section], list[Block]]:
    """Sections and protected blocks of a document split on ``\\n``; code is opaque.

    Raises ``SkillError`` (with the line number and the fix) for unclosed, nested, duplicate
    or unmatched protected-block markers.
    """
    structure = _structure("\n".join(ln.replace("\r", " ") for ln in lines))
    blocks: list[Block] = []
    opened: tuple[str, int] | None = None
    for i, line in enumerate(lines):
        if i not in structure.opaque and (m := MARKER.match(line.rstrip("\r"))):
            opened = _marker(m.group(1) == "/", m.group(2), i, opened, blocks)
    if opened is not None:
        raise SkillError(
            f"protected block {opened[0]!r} opened at line {opened[1] + 1} is never closed; "
            f"add '<!-- /skillgrad:protected {opened[0]} -->' after its content"
        )
    return _sections(lines, list(structure.headings)), blocks


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


def _sections(lines: list[str], headings: list[tuple[int, int, str, int]]) -> list[Section]:
    n = len(lines)
    first = headings[0][0] if headings else n
    out = [Section((), 0, "", 0, n, "\n".join(lines[:first]), first)]
    stack: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    for k, (i, level, title, span) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        later = headings[k + 1 :]
        end = next((h[0] for h in later if h[1] <= level), n)
        body_end = later[0][0] if later else n
        body = "\n".join(lines[i + span : body_end])
        path = tuple(t for _, t in stack)
        out.append(Section(path, level, title, i, end, body, body_end, span))
    return out
