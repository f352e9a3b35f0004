"""The answer-leak check: find skill lines that copy train/val data verbatim.

A learned skill must teach the target rules, not memorise items. ``LeakIndex`` indexes the
train and val items of a run once; ``LeakIndex.find(skill)`` then returns, in time linear in the
skill's length, every skill line that copies an item's data, as ``types.Leak`` records (file of
a skill package, line number, the copied span, the item and what was copied).

Text is compared as words (``skill/text.py``): invisible code points removed (``strip_invisible``:
Unicode format
characters such as zero-width spaces, joiners, bidi controls and tag characters, variation
selectors, other controls), NFKC-normalised, case-folded, ``\\w+`` runs (punctuation and
whitespace are ignored, so re-spacing, re-punctuating or salting a copy with zero-width
characters does not hide it). ``visible`` shows such text as the target receives it, each
invisible code point as ``<U+200B>``. An item's
``input`` and ``reference`` are rendered as text by taking their string leaves (the values of
mappings, the elements of lists; numbers and other scalars as ``str``); mapping keys are field
names, not data.

Rules (``n`` is ``train.leak_ngram``, default 8):

1. **Long spans.** A run of ``n`` consecutive words of a skill line that is also a run of ``n``
   consecutive words of one string of an item's input or reference is a copy; overlapping
   copied runs on a line merge into one span. Eight words is long enough that natural rule text
   ("answer with one word: positive or negative") does not meet a review or a gold answer by
   chance, and short enough that pasting a sentence of an item is caught.
2. **Boilerplate is not data.** An n-gram found in the data of at least
   ``max(3, a quarter of the items)`` distinct items is the task's template (instructions in
   every input, a fixed answer preamble), not one item's data: it is never flagged.
3. **Short items: only the pair.** A reference shorter than ``n`` words (a label such as
   "positive", a number, a name) is never flagged on its own: any sensible rule names the
   labels, and a lone number or name says nothing about which item it answers. Likewise a
   short input alone is only the question. What memorises an item is its question *with* its
   answer, so when both an item's input and its reference are shorter than ``n`` words, a
   line holding the whole input and, separately, the whole reference at most
   ``PAIR_GAP`` words apart ("apple -> APPLE", "for 'apple' the answer is APPLE") is a
   lookup-table entry and is flagged. A short fragment of a *long* input next to a label
   ("'loved the acting' means positive") is a feature rule, not a copy, and is not flagged.
4. **The user's own text is never flagged.** Copies that the initial skill already contains
   (``exempt``) are the user's choice — few-shot examples written on purpose — not something
   training learned: an n-gram (rule 1) or a pair span (rule 3) present in the initial skill
   is skipped.

Which leaks a *step* introduced is ``new_leaks(candidate, incumbent)``: the gate refuses a
candidate on those only (``train.reject_leaks``), so a run resumed with the option switched on
is not stuck behind a leak its incumbent already carried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillgrad.errors import SkillError
from skillgrad.runs.records import Leak, LeakSource
from skillgrad.skill.package import SkillPackage, is_package_text
from skillgrad.skill.text import WORD_RE, Words, invisible_pattern, normalise, visible, words
from skillgrad.types import Item

DEFAULT_NGRAM = 8
PAIR_GAP = 4  # rule 3: at most this many words between a short input and its reference
BOILERPLATE_SHARE = 0.25  # rule 2: an n-gram in this share of the items (and >= 3) is template


def _word_spans(line: str) -> tuple[Words, list[tuple[int, int]]]:
    """The normalised words of a line with each word's character span in the line.

    NFKC can change a line's length, so the spans are found on the line without its invisible
    code points, word by word (a word that normalises differently is still one ``\\w+`` run
    there), and mapped back to the original line."""
    pattern = invisible_pattern()
    kept_at = [m.start() for m in pattern.finditer(line)]
    clean = pattern.sub("", line) if kept_at else line
    where = _positions(len(line), kept_at)
    ws: list[str] = []
    kept: list[tuple[int, int]] = []
    for m in WORD_RE.finditer(clean):
        a, b = m.span()
        for w in WORD_RE.findall(normalise(clean[a:b])):
            ws.append(w)
            kept.append((where(a), where(b - 1) + 1))
    return tuple(ws), kept


def _positions(length: int, removed: list[int]) -> Callable[[int], int]:
    """Index in the original line of character ``i`` of the line with ``removed`` cut out."""
    if not removed:
        return lambda i: i
    gone = set(removed)
    table = [i for i in range(length) if i not in gone]
    return table.__getitem__


def texts_of(value: Any) -> list[str]:
    """The string leaves of an item's ``input`` or ``reference`` (see the module doc)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in texts_of(v)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [t for v in value for t in texts_of(v)]
    return [str(value)]


def _ngrams(ws: Words, n: int) -> Iterator[Words]:
    for i in range(len(ws) - n + 1):
        yield ws[i : i + n]


@dataclass(frozen=True)
class _Origin:
    item_id: str
    split: str
    source: LeakSource


@dataclass
class LeakIndex:
    """The n-grams (hashed) and short input/reference pairs of a run's train and val items.

    Built once per run (``build``); ``find`` is then linear in the skill's length."""

    n: int = DEFAULT_NGRAM
    origins: list[_Origin] = field(default_factory=list)
    grams: dict[int, int] = field(default_factory=dict)
    """hash of an n-gram -> index into ``origins`` (its first item)."""
    pairs: dict[Words, dict[Words, int]] = field(default_factory=dict)
    """short input words -> {short reference words -> index into ``origins``}."""

    @classmethod
    def build(cls, items: Mapping[str, Sequence[Item]], n: int = DEFAULT_NGRAM) -> LeakIndex:
        """Index ``items`` (split name -> items; the run passes train and val)."""
        if n < 2:
            raise ValueError(f"leak n-gram length must be at least 2, got {n}")
        index = cls(n=n)
        owners: dict[int, int] = {}  # every n-gram -> its first origin
        shared: dict[int, int] = {}  # n-grams of several items -> how many items (few)
        n_items = 0
        for split, rows in items.items():
            for item in rows:
                n_items += 1
                seen: set[int] = set()
                question = [words(t) for t in texts_of(item.input)]
                answer = [words(t) for t in texts_of(item.reference)]
                sources: tuple[tuple[LeakSource, list[Words]], ...] = (
                    ("input", question),
                    ("reference", answer),
                )
                for source, word_lists in sources:
                    origin = len(index.origins)
                    index.origins.append(_Origin(item.id, split, source))
                    for ws in word_lists:
                        for gram in _ngrams(ws, n):
                            h = hash(gram)
                            if h in seen:
                                continue
                            seen.add(h)
                            if h in owners:
                                shared[h] = shared.get(h, 1) + 1
                            else:
                                owners[h] = origin
                q = tuple(w for ws in question for w in ws)
                a = tuple(w for ws in answer for w in ws)
                if 0 < len(q) < n and 0 < len(a) < n:
                    index.origins.append(_Origin(item.id, split, "input+reference"))
                    index.pairs.setdefault(q, {}).setdefault(a, len(index.origins) - 1)
        limit = max(3, BOILERPLATE_SHARE * n_items)
        for h, count in shared.items():
            if count >= limit:
                del owners[h]
        index.grams = owners
        return index

    def find(self, skill: str, exempt: str = "") -> tuple[Leak, ...]:
        """Every line of ``skill`` (each file of a package bundle) that copies indexed data,
        except copies ``exempt`` (the initial skill) already contains. In file and line order."""
        allowed = _Exempt.of(exempt, self.n)
        found: list[Leak] = []
        for path, text in _files(skill):
            for number, line in enumerate(text.split("\n"), start=1):
                found.extend(self._line(path, number, line, allowed))
        return tuple(found)

    def _line(self, path: str, number: int, line: str, allowed: _Exempt) -> list[Leak]:
        ws, spans = _word_spans(line)
        if not ws:
            return []
        out: list[Leak] = []
        # rule 1: maximal runs of consecutive copied n-grams, each attributed to its first item
        run_start, run_end, run_origin = -1, -1, -1
        for i in range(len(ws) - self.n + 1):
            gram = ws[i : i + self.n]
            h = hash(gram)
            origin = self.grams.get(h, -1)
            if origin < 0 or h in allowed.grams:
                continue
            if run_start >= 0 and i <= run_end:  # overlaps or touches the run: extend it
                run_end = i + self.n
                continue
            if run_start >= 0:
                out.append(self._leak(path, number, line, spans, run_start, run_end, run_origin))
            run_start, run_end, run_origin = i, i + self.n, origin
        if run_start >= 0:
            out.append(self._leak(path, number, line, spans, run_start, run_end, run_origin))
        # rule 3: a short input and its short reference, close together
        if self.pairs:
            out.extend(self._pairs(path, number, line, ws, spans, allowed))
        return out

    def _pairs(
        self,
        path: str,
        number: int,
        line: str,
        ws: Words,
        spans: list[tuple[int, int]],
        allowed: _Exempt,
    ) -> Iterator[Leak]:
        reported: set[int] = set()
        for i in range(len(ws)):
            for length in range(1, min(self.n, len(ws) - i + 1)):
                answers = self.pairs.get(ws[i : i + length])
                if not answers:
                    continue
                for answer, origin in answers.items():
                    where = _near(ws, (i, i + length), answer, PAIR_GAP)
                    if where is None or origin in reported:
                        continue
                    a, b = min(i, where[0]), max(i + length, where[1])
                    if allowed.contains(ws[a:b]):
                        continue
                    reported.add(origin)
                    yield self._leak(path, number, line, spans, a, b, origin)

    def _leak(
        self,
        path: str,
        number: int,
        line: str,
        spans: list[tuple[int, int]],
        start: int,
        end: int,
        origin: int,
    ) -> Leak:
        o = self.origins[origin]
        span = line[spans[start][0] : spans[end - 1][1]]
        return Leak(path, number, span, o.item_id, o.split, o.source)


def _near(ws: Words, taken: tuple[int, int], answer: Words, gap: int) -> tuple[int, int] | None:
    """An occurrence of ``answer`` in ``ws`` not overlapping ``taken`` and at most ``gap`` words
    away from it, or None."""
    a, b = taken
    lo, hi = max(0, a - gap - len(answer)), min(len(ws), b + gap + len(answer))
    for j in range(lo, hi - len(answer) + 1):
        end = j + len(answer)
        if ws[j:end] != answer or (j < b and end > a):
            continue
        if (a - end if end <= a else j - b) <= gap:
            return j, end
    return None


@dataclass(frozen=True)
class _Exempt:
    """What the initial skill already contains: its n-gram hashes and its lines as words."""

    grams: frozenset[int]
    lines: tuple[str, ...]

    @classmethod
    def of(cls, text: str, n: int) -> _Exempt:
        if not text:
            return cls(frozenset(), ())
        line_words = [words(line) for _, t in _files(text) for line in t.split("\n")]
        grams = frozenset(hash(g) for ws in line_words for g in _ngrams(ws, n))
        return cls(grams, tuple(f" {' '.join(ws)} " for ws in line_words if ws))

    def contains(self, ws: Words) -> bool:
        needle = f" {' '.join(ws)} "
        return any(needle in line for line in self.lines)


def _files(skill: str) -> list[tuple[str, str]]:
    """(path, text) per file: a package bundle's files, or ``("", skill)``."""
    if is_package_text(skill):
        try:
            return list(SkillPackage.from_bundle(skill).files)
        except SkillError:  # a damaged bundle is still text to check, as one file
            return [("", skill)]
    return [("", skill)]


def _key(leak: Leak) -> tuple[str, str, str, Words]:
    return leak.item_id, leak.split, leak.source, words(leak.span)


def new_leaks(candidate: Iterable[Leak], incumbent: Iterable[Leak]) -> tuple[Leak, ...]:
    """The leaks of ``candidate`` that ``incumbent`` does not have (same item, same kind, same
    copied words; line numbers may differ after an edit moved the text)."""
    old = {_key(x) for x in incumbent}
    return tuple(x for x in candidate if _key(x) not in old)


def describe(leaks: Sequence[Leak], limit: int = 3) -> str:
    """One line naming the first ``limit`` leaks, for gate reasons and warnings."""
    parts = [
        f"{(x.file + ':') if x.file else 'line '}{x.line} copies {x.source} of {x.item_id} "
        f"({x.split}): {short_span(visible(x.span))!r}"
        for x in leaks[:limit]
    ]
    more = f"; and {len(leaks) - limit} more" if len(leaks) > limit else ""
    return "; ".join(parts) + more


def short_span(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters with "..." (the span a leak message quotes)."""
    return text if len(text) <= width else text[: width - 3] + "..."


__all__ = [
    "DEFAULT_NGRAM",
    "PAIR_GAP",
    "LeakIndex",
    "describe",
    "new_leaks",
    "short_span",
]
