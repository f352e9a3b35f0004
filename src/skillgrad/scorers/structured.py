"""Scorers for structured answers: ``choice`` (one multiple-choice label or option text) and
``json_fields`` (a JSON object in the output compared field by field, with partial credit).
"""

from __future__ import annotations

import json
import re
from typing import Any

import skillgrad.safeparse as safeparse
from skillgrad.errors import ConfigError
from skillgrad.models.structured import extract_json
from skillgrad.scorers.base import BaseScorer
from skillgrad.scorers.textnorm import nfkc, normalize_answer, parse_number, short
from skillgrad.types import Item, Score

_ARTICLE_USE = re.compile(r"\s+(?!or\b|and\b|nor\b)[a-z]")
_KEYWORD = r"(?:answer|option|choice|correct|final)\s*(?:is|:|=)?\s*(?:option\s*)?"


class ChoiceScorer(BaseScorer):
    """The output names exactly one option: a label ("B", "(B)", "Answer: B") or an option's text.
    Several different labels is ambiguous and fails. The reference is a label, an option text or
    a 0-based index; options come from ``item.input[options_field]`` (list or label->text dict)."""

    name = "choice"

    def __init__(self, labels: str = "ABCD", options_field: str = "options") -> None:
        if not labels or len(set(labels)) != len(labels):
            raise ConfigError(f"choice labels must be distinct characters, got {labels!r}")
        self.labels, self.options_field = labels.upper(), options_field

    def _options(self, item: Item) -> dict[str, str]:
        raw = item.input.get(self.options_field) if isinstance(item.input, dict) else None
        if isinstance(raw, str) and raw.strip()[:1] in ("[", "{"):  # a CSV cell holding JSON
            try:
                raw = safeparse.loads(raw)
            except json.JSONDecodeError:  # also too deep or too long (JSONBoundError)
                raw = None
        if isinstance(raw, dict):
            return {str(k).strip().upper(): str(v) for k, v in raw.items()}
        if isinstance(raw, (list, tuple)):
            labels = self.labels if len(raw) <= len(self.labels) else _letters(len(raw))
            return {labels[i]: str(v) for i, v in enumerate(raw)}
        return {}

    def _label_of(self, reference: Any, options: dict[str, str]) -> str | None:
        if isinstance(reference, int) and not isinstance(reference, bool):
            labels = list(options) or list(self.labels)
            return labels[reference] if 0 <= reference < len(labels) else None
        text = nfkc(str(reference)).strip()
        stripped = text.strip("()[]. :").upper()
        if stripped in options or (not options and stripped in self.labels):
            return stripped
        wanted = normalize_answer(text)
        return next((k for k, v in options.items() if normalize_answer(v) == wanted), None)

    def check_reference(self, reference: Any) -> str | None:
        if isinstance(reference, int) and not isinstance(reference, bool):
            return None
        text = nfkc(str(reference)).strip().strip("()[]. :").upper()
        if len(text) == 1 and text not in self.labels:
            return f"reference {short(reference)} is not one of the labels {self.labels}"
        return None

    def _found(self, output: str, options: dict[str, str]) -> list[str]:
        labels = "".join(options) or self.labels
        cls = "[" + re.escape(labels) + "]"
        text = nfkc(output).strip()
        whole = re.fullmatch(r"[(\[]?\s*(" + cls + r")\s*[)\].:]?", text, re.IGNORECASE)
        if whole:
            return [whole.group(1).upper()]
        strong = re.findall(_KEYWORD + r"[(\[]?(" + cls + r")\b", text, re.IGNORECASE)
        strong += re.findall(r"[(\[](" + cls + r")[)\]]", text)
        strong += re.findall(r"(?m)^\s*(" + cls + r")[).:]", text)
        if strong:
            return sorted({s.upper() for s in strong})
        # A bare capital letter, unless it reads as the English article or pronoun ("A cat").
        weak = [
            m.group(1)
            for m in re.finditer(r"\b(" + cls + r")\b", text)
            if not (m.group(1) in "AI" and _ARTICLE_USE.match(text, m.end()))
        ]
        if weak:
            return sorted(set(weak))
        norm = f" {normalize_answer(text)} "
        hits = {k: normalize_answer(v) for k, v in options.items()}
        hits = {k: v for k, v in hits.items() if v and f" {v} " in norm}
        # "Paris, Texas" mentioned also mentions "Paris": keep only the longest overlapping texts.
        longest = [k for k, v in hits.items() if not any(v != o and v in o for o in hits.values())]
        return sorted(longest)

    def _name(self, label: str | None, options: dict[str, str]) -> str:
        if label is None:
            return "?"
        return f"{label} ({short(options[label], 40)})" if label in options else label

    def _score(self, output: str, item: Item) -> Score:
        options = self._options(item)
        want = self._label_of(item.reference, options)
        if want is None:
            return Score(
                0.0,
                False,
                f"cannot score: reference {short(item.reference)} is not a label or option text "
                f"(options: {', '.join(options) or self.labels})",
            )
        found = self._found(output, options)
        expected = self._name(want, options)
        if not found:
            return Score(0.0, False, f"expected {expected}, but no option label found in output")
        if len(found) > 1:
            return Score(
                0.0,
                False,
                f"ambiguous: output names several options ({', '.join(found)}); expected "
                f"exactly one: {expected}",
            )
        if found[0] == want:
            return Score(1.0, True, f"correct: {expected}")
        return Score(0.0, False, f"expected {expected}, got {self._name(found[0], options)}")

    def describe(self, item: Item) -> str:
        options = self._options(item)
        return self._name(self._label_of(item.reference, options), options)


def _letters(n: int) -> str:
    return "".join(chr(ord("A") + i) for i in range(min(n, 26)))


def _get_path(obj: Any, path: str) -> tuple[bool, Any]:
    for part in path.split("."):
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return False, None
    return True, obj


class JsonFieldsScorer(BaseScorer):
    """Parse a JSON object from the output (whole text, fenced block, or after prose) and compare
    ``fields`` (dotted paths; default: every key of the reference object). Strings compare after
    normalisation (exactly with ``strict``), numbers within ``tolerance``. Value = fraction of
    fields matched; passed = all matched."""

    name = "json_fields"

    def __init__(
        self, fields: list[str] | None = None, strict: bool = False, tolerance: float = 1e-6
    ) -> None:
        self.fields, self.strict, self.tolerance = fields, strict, tolerance

    def _reference(self, reference: Any) -> dict[str, Any] | None:
        if isinstance(reference, str):
            try:
                reference = safeparse.loads(reference)
            except json.JSONDecodeError:  # also too deep or too long (JSONBoundError)
                return None
        return reference if isinstance(reference, dict) else None

    def check_reference(self, reference: Any) -> str | None:
        if self._reference(reference) is None:
            return f"reference {short(reference)} is not a JSON object"
        return None

    def _same(self, got: Any, want: Any) -> bool:
        if isinstance(want, (int, float)) and not isinstance(want, bool):
            g = parse_number(got)
            return g is not None and abs(g.value - want) <= self.tolerance
        if isinstance(want, str) and isinstance(got, (str, int, float)):
            if self.strict:
                return isinstance(got, str) and nfkc(got).strip() == nfkc(want).strip()
            return normalize_answer(str(got)) == normalize_answer(want)
        if isinstance(want, list) and isinstance(got, list):
            return len(got) == len(want) and all(map(self._same, got, want))
        if isinstance(want, dict) and isinstance(got, dict):
            return set(got) == set(want) and all(self._same(got[k], want[k]) for k in want)
        return bool(got == want)

    def _score(self, output: str, item: Item) -> Score:
        ref = self._reference(item.reference)
        if ref is None:
            return Score(0.0, False, f"cannot score: {self.check_reference(item.reference)}")
        fields = self.fields or list(ref)
        if not fields:
            return Score(0.0, False, "cannot score: the reference object has no fields")
        try:
            got, why = extract_json(nfkc(output)), ""
        except ValueError as exc:
            got, why = None, str(exc)
        if not isinstance(got, dict):
            why = why or f"output JSON is a {type(got).__name__}, not an object"
            return Score(0.0, False, f"{why}; expected an object with fields {', '.join(fields)}")
        notes, matched = [], 0
        for field in fields:
            has_want, want = _get_path(ref, field)
            has_got, value = _get_path(got, field)
            if not has_want:
                notes.append(f"{field}: not in the reference (check the scorer's fields)")
            elif not has_got:
                notes.append(f"{field}: missing (expected {short(want, 40)})")
            elif self._same(value, want):
                matched += 1
                notes.append(f"{field}: ok")
            else:
                notes.append(f"{field}: expected {short(want, 40)}, got {short(value, 40)}")
        passed = matched == len(fields)
        head = f"{matched}/{len(fields)} fields match"
        return Score(matched / len(fields), passed, head + "; " + "; ".join(notes))


__all__ = ["ChoiceScorer", "JsonFieldsScorer"]
