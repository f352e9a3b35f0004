"""The text helpers every room uses: what a reader does not see, and the one normal form words
are compared in (the leak check, the example guard, the rule screens and the viewers share it).

Invisible code points are Unicode format characters (Cf: zero-width spaces, joiners, bidi
controls, tag characters), variation selectors, the combining grapheme joiner, Hangul fillers and
the control characters that are not whitespace."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

WORD_RE = re.compile(r"\w+")
Words = tuple[str, ...]


# Code points a reader does not see but a model reads (and \\w+ splits words at): every format
# character (Cf), variation selectors, the combining grapheme joiner, Hangul fillers, and the
# control characters that are not whitespace.
_OTHER_INVISIBLE = "\u034f\u115f\u1160\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef"
_CONTROLS = "\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f"


@functools.cache
def invisible_pattern() -> re.Pattern[str]:
    """One character class of every invisible code point (built once: ~0.1 s)."""
    ranges: list[str] = []
    start = prev = -2
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)) != "Cf":
            continue
        if cp != prev + 1:
            if start >= 0:
                ranges.append(_range(start, prev))
            start = cp
        prev = cp
    ranges.append(_range(start, prev))
    return re.compile(f"[{''.join(ranges)}{_OTHER_INVISIBLE}{_CONTROLS}]")


def _range(a: int, b: int) -> str:
    return re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"


def strip_invisible(text: str) -> str:
    """``text`` without its invisible code points (see the module doc)."""
    return invisible_pattern().sub("", text)


def visible(text: str) -> str:
    """``text`` as the target receives it, each invisible code point shown as ``<U+XXXX>``."""
    return invisible_pattern().sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def normalise(text: str) -> str:
    """The form words are compared in: invisible code points removed, NFKC, case-folded."""
    return unicodedata.normalize("NFKC", strip_invisible(text)).casefold()


def words(text: str) -> Words:
    """The normalised words of ``text`` (punctuation and whitespace dropped)."""
    return tuple(WORD_RE.findall(normalise(text)))


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """``text`` on one line (whitespace runs as one space), split after each ``.``, ``!`` or
    ``?`` that a space follows."""
    return _SENTENCE_BREAK.split(" ".join(text.split()))


_RUNS = {ch: re.compile(re.escape(ch) + "+") for ch in "~`"}


def fence_for(text: str) -> str:
    """A code fence that ``text`` cannot close: tildes (or backticks, when shorter) one longer
    than the longest run of that character anywhere in ``text``, at least three. CommonMark
    closes a fence with a line of at least as many of its character (after up to 3 spaces, with
    only spaces after); counting runs anywhere, not only at line starts, also covers a ``\\r``
    that a Markdown reader takes for a line break."""
    fences = []
    for ch, run in _RUNS.items():
        longest = max((len(m.group()) for m in run.finditer(text)), default=0)
        fences.append(ch * max(3, longest + 1))
    return min(fences, key=len)  # tildes on a tie: a backtick fence's info string is limited


__all__ = [
    "WORD_RE",
    "Words",
    "fence_for",
    "invisible_pattern",
    "normalise",
    "sentences",
    "strip_invisible",
    "visible",
    "words",
]
