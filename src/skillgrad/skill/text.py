"""Text helpers every room uses: first the one rule for outside text, then what a reader does not
see and the one normal form words are compared in.

Outside text (a model's reply, an environment's observation, task data, a user's file) may hold
code points that UTF-8 cannot encode; ``valid_text`` makes it safe for a request, a cache key or
a file. Invisible code points are Unicode format characters (Cf: zero-width spaces, joiners, bidi
controls, tag characters), variation selectors, the combining grapheme joiner, Hangul fillers and
the control characters that are not whitespace; the leak check, the example guard, the rule
screens and the viewers compare words in ``normalise``'s form."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from typing import Any

# A Python str may hold the surrogate code points U+D800-U+DFFF on their own: a JSON escape
# such as "\udce9", or a byte read with errors="surrogateescape". UTF-8 can encode none of them.
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def valid_text(s: str) -> str:
    """``s`` as valid UTF-8 text. The rule: every surrogate code point (U+D800-U+DFFF, which
    UTF-8 cannot encode: a lone JSON escape like ``"\\udce9"``, a byte decoded with
    ``surrogateescape``) becomes U+FFFD, one for one; every other character is kept, so valid
    text comes back unchanged (the same object) and lengths and offsets never move. The byte a
    ``surrogateescape`` stood for is not guessed at: its encoding is unknown."""
    if s.isascii():  # the common case, checked in C without a copy
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, s)
    return s


def valid_data(value: Any) -> Any:
    """``value`` (a JSON-like value: dicts, lists, tuples, strings, numbers) with every string in
    it, dict keys included, made valid by ``valid_text``; lists stay lists and tuples tuples,
    and a value with nothing to change comes back as the same object."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        items = [(valid_data(k), valid_data(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        cleaned = [valid_data(v) for v in value]
        if all(c is v for c, v in zip(cleaned, value, strict=True)):
            return value
        return tuple(cleaned) if isinstance(value, tuple) else cleaned
    return value


WORD_RE = re.compile(r"\w+")
FUNCTION_WORDS = frozenset(
    "a an the and or to of in on at by for with from as is are be it its this that these those "
    "you your yours before after then than so".split()
)
"""Words that name nothing: no instruction of a rule, no object of a command."""
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


def cut(text: Any, limit: int, *, at_word: bool = True) -> str:
    """``text`` (None as '') on one line, whitespace runs as one space, at most ``limit``
    characters when it fits. Longer text is cut at a word boundary and ends in " …"
    (``at_word``: a demonstration's input), or cut at ``limit - 1`` characters and ends in "…"
    (a clip: an observation, an action or an error the optimizer reads line by line)."""
    flat = " ".join(str(text or "").split())
    if len(flat) <= limit:
        return flat
    if not at_word:
        return flat[: limit - 1] + "…"
    return flat[: max(1, limit - 1)].rsplit(" ", 1)[0] + " …"


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
    "REPLACEMENT",
    "WORD_RE",
    "Words",
    "cut",
    "fence_for",
    "invisible_pattern",
    "normalise",
    "sentences",
    "strip_invisible",
    "valid_data",
    "valid_text",
    "visible",
    "words",
]
