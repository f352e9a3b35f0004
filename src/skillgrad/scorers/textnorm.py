"""Text helpers the scorers share: unicode normalisation, SQuAD-style answer normalisation,
number parsing ("1,000", "1e3", "$3.50", "50%", "−5", full-width digits) and fenced code blocks.
JSON in model output is ``models.structured.extract_json`` (the one extractor).
"""

from __future__ import annotations

import json
import math
import re
import string
import unicodedata
from dataclasses import dataclass
from typing import Any

# Minus-like characters NFKC leaves alone; models and spreadsheets emit them for negatives.
_MINUSES = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-"})
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCT = set(string.punctuation)


def nfkc(text: str) -> str:
    """NFKC-normalise (full-width digits and letters become ASCII) and unify minus signs."""
    return unicodedata.normalize("NFKC", text).translate(_MINUSES)


def strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def squash_spaces(text: str) -> str:
    return " ".join(text.split())


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


def normalize_answer(text: str, accents: bool = True) -> str:
    """SQuAD normalisation plus NFKC: lower case, no punctuation, no articles, single spaces.
    ``accents=True`` also folds accented letters to their base letter ("café" == "cafe")."""
    text = nfkc(text).casefold()
    if accents:
        text = strip_accents(text)
    text = "".join(c for c in text if not _is_punct(c))
    return squash_spaces(_ARTICLES.sub(" ", text))


def short(value: Any, limit: int = 80) -> str:
    """``repr`` of a value cut to ``limit`` characters, for feedback lines."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return repr(text)


@dataclass(frozen=True)
class Number:
    value: float
    text: str
    percent: bool = False

    def candidates(self) -> tuple[float, ...]:
        """The values this number may stand for: "50%" is 50 or 0.5."""
        return (self.value, self.value / 100) if self.percent else (self.value,)


_NUMBER = re.compile(
    r"(?<![A-Za-z0-9./])"  # not the tail of a word ("H2O"), another number or a date
    r"(?P<sign>[-+])?(?P<cur>[$€£¥]\s?)?(?P<sign2>[-+])?"
    r"(?P<body>(?P<num>\d+)/(?P<den>\d+)(?![/\d])"  # a plain fraction, not a date like 1/2/2024
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?P<pct>\s?%)?"
)


def _value(m: re.Match[str]) -> float:
    if m.group("den"):
        return int(m.group("num")) / int(m.group("den"))
    raw = m.group("body").replace(",", "")
    if m.group("exp"):
        raw += "e" + m.group("exp")
    return float(raw)


def find_numbers(text: str) -> list[Number]:
    """Every number in ``text``, in order. Commas are thousands separators only in groups of
    three ("1,000" is one number, "1,5" is two); "3/4" is 0.75 (but "1/2/2024" is no fraction)."""
    text = nfkc(text)
    out: list[Number] = []
    for m in _NUMBER.finditer(text):
        sign = m.group("sign") or m.group("sign2") or ""
        start = m.start("sign") if m.group("sign") else m.start()
        if sign and start > 0 and text[start - 1].isalnum():
            sign = ""  # "3-5" is a range and "COVID-19" a name, not negative numbers
        try:
            value = _value(m)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        if not math.isfinite(value):
            continue
        value = -value if sign == "-" else value
        out.append(Number(value, m.group(0).strip(), bool(m.group("pct"))))
    return out


def parse_number(value: Any) -> Number | None:
    """A reference value as a number: ints and floats as is, strings when they hold exactly one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Number(float(value), str(value)) if math.isfinite(value) else None
    if isinstance(value, str):
        found = find_numbers(value)
        return found[0] if len(found) == 1 else None
    return None


def format_number(value: float) -> str:
    return f"{value:.10g}"


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)


def fenced_blocks(text: str, languages: tuple[str, ...] = ()) -> list[str]:
    """Bodies of ```fenced``` code blocks, optionally only those tagged with one of ``languages``
    (untagged blocks always count)."""
    blocks = []
    for m in _FENCE.finditer(text):
        lang = m.group(1).lower()
        if not languages or not lang or lang in languages:
            blocks.append(m.group(2))
    return blocks


__all__ = [
    "Number",
    "fenced_blocks",
    "find_numbers",
    "format_number",
    "nfkc",
    "normalize_answer",
    "parse_number",
    "short",
    "squash_spaces",
    "strip_accents",
]
