"""Text scorers: exact, normalized, token_f1, numeric (and the base every built-in scorer shares).

Each turns (model output, item) into a Score whose feedback says what was expected and what came
back, so the optimizer can tell a format slip from a wrong answer. A list reference means "any of
these answers" and the best match counts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from skillgrad.errors import ConfigError
from skillgrad.scorers.base import BaseScorer
from skillgrad.scorers.textnorm import (
    Number,
    find_numbers,
    format_number,
    nfkc,
    normalize_answer,
    parse_number,
    short,
    squash_spaces,
)
from skillgrad.types import Item, Score


def references(reference: Any) -> list[str]:
    """A reference as the list of acceptable answer strings."""
    values = reference if isinstance(reference, (list, tuple)) else [reference]
    return [v if isinstance(v, str) else str(v) for v in values]


def best(results: list[Score]) -> Score:
    return max(results, key=lambda s: (s.passed, s.value))


class ExactScorer(BaseScorer):
    """The output equals the reference after NFKC and trimming (``strip``), case-sensitive unless
    ``case_sensitive`` is false. Feedback says when only case or spacing differs."""

    name = "exact"

    def __init__(self, case_sensitive: bool = True, strip: bool = True) -> None:
        self.case_sensitive = case_sensitive
        self.strip = strip

    def _prep(self, text: str) -> str:
        text = nfkc(text)
        text = text.strip() if self.strip else text
        return text if self.case_sensitive else text.casefold()

    def _score(self, output: str, item: Item) -> Score:
        return best([self._one(output, ref) for ref in references(item.reference)])

    def _one(self, output: str, ref: str) -> Score:
        got, want = self._prep(output), self._prep(ref)
        if got == want:
            return Score(1.0, True, f"correct: {short(ref)}")
        hint = ""
        if got.casefold() == want.casefold():
            hint = " (differs only in letter case)"
        elif squash_spaces(got) == squash_spaces(want):
            hint = " (differs only in whitespace)"
        elif normalize_answer(got) == normalize_answer(want):
            hint = " (differs only in punctuation, articles or accents)"
        elif want in got:
            hint = " (the answer is there, but with extra text around it)"
        return Score(0.0, False, f"expected {short(ref)}, got {short(output)}{hint}")


class NormalizedScorer(BaseScorer):
    """Equal after SQuAD normalisation: case, punctuation, articles, whitespace, NFKC, and
    accents (unless ``accents: false``)."""

    name = "normalized"

    def __init__(self, accents: bool = True) -> None:
        self.accents = accents

    def _score(self, output: str, item: Item) -> Score:
        got = normalize_answer(output, self.accents)
        results = []
        for ref in references(item.reference):
            want = normalize_answer(ref, self.accents)
            if got == want:
                results.append(Score(1.0, True, f"correct: {short(ref)}"))
                continue
            hint = " (the answer is there, but with extra text)" if want and want in got else ""
            results.append(Score(0.0, False, f"expected {short(ref)}, got {short(output)}{hint}"))
        return best(results)


class TokenF1Scorer(BaseScorer):
    """SQuAD token F1 between normalised output and reference; passes at ``pass_threshold``."""

    name = "token_f1"

    def __init__(self, pass_threshold: float = 0.5) -> None:
        if not 0.0 <= pass_threshold <= 1.0:
            raise ConfigError(f"token_f1 pass_threshold must be in [0, 1], got {pass_threshold}")
        self.pass_threshold = pass_threshold

    def _score(self, output: str, item: Item) -> Score:
        return best([self._one(output, ref) for ref in references(item.reference)])

    def _one(self, output: str, ref: str) -> Score:
        got, want = normalize_answer(output).split(), normalize_answer(ref).split()
        common = Counter(got) & Counter(want)
        overlap = sum(common.values())
        if not got or not want or overlap == 0:
            f1, precision, recall = float(got == want), 0.0, 0.0
        else:
            precision, recall = overlap / len(got), overlap / len(want)
            f1 = 2 * precision * recall / (precision + recall)
        passed = f1 >= self.pass_threshold
        missing = [t for t in want if t not in got][:8]
        extra = [t for t in got if t not in want][:8]
        parts = [f"token F1 {f1:.2f} (precision {precision:.2f}, recall {recall:.2f})"]
        parts.append(f"expected {short(ref)}")
        if missing:
            parts.append(f"missing words: {', '.join(missing)}")
        if extra:
            parts.append(f"extra words: {', '.join(extra)}")
        return Score(f1, passed, "; ".join(parts))


class NumericScorer(BaseScorer):
    """The ``pick`` (last | first | only) number in the output is within ``tolerance`` (absolute)
    or ``rel_tolerance`` (relative) of the reference. Understands "1,000", "1e3", "$3.50",
    "50%" (as 50 or 0.5), unicode minus and full-width digits."""

    name = "numeric"

    def __init__(
        self,
        tolerance: float = 1e-6,
        rel_tolerance: float = 0.0,
        pick: Literal["last", "first", "only"] = "last",
    ) -> None:
        if pick not in ("last", "first", "only"):
            raise ConfigError(f"numeric pick must be 'last', 'first' or 'only', got {pick!r}")
        if tolerance < 0 or rel_tolerance < 0:
            raise ConfigError("numeric tolerance and rel_tolerance must be >= 0")
        self.tolerance, self.rel_tolerance, self.pick = tolerance, rel_tolerance, pick

    def check_reference(self, reference: Any) -> str | None:
        refs = reference if isinstance(reference, (list, tuple)) else [reference]
        bad = [r for r in refs if parse_number(r) is None]
        return f"reference {short(bad[0])} is not a single number" if bad else None

    def _close(self, got: Number, want: Number) -> bool:
        for a in got.candidates():
            for b in want.candidates():
                if abs(a - b) <= max(self.tolerance, self.rel_tolerance * abs(b)):
                    return True
        return False

    def _score(self, output: str, item: Item) -> Score:
        refs = item.reference if isinstance(item.reference, (list, tuple)) else [item.reference]
        wants = [parse_number(r) for r in refs]
        if any(w is None for w in wants):
            return Score(0.0, False, f"cannot score: {self.check_reference(item.reference)}")
        found = find_numbers(output)
        if not found:
            return Score(0.0, False, f"expected {short(refs[0])}, but no number in {short(output)}")
        if self.pick == "only" and len(found) > 1:
            listed = ", ".join(n.text for n in found[:6])
            return Score(0.0, False, f"expected one number, found {len(found)}: {listed}")
        got = found[0] if self.pick == "first" else found[-1]
        return best([self._one(got, w, found, output) for w in wants if w is not None])

    def _one(self, got: Number, want: Number, found: list[Number], output: str) -> Score:
        if self._close(got, want):
            return Score(1.0, True, f"correct: {want.text}")
        diff = format_number(abs(got.value - want.value))
        msg = f"expected {want.text!r}, got {got.text!r} (numbers differ by {diff})"
        if any(self._close(n, want) for n in found if n is not got):
            msg += f"; the expected value appears in the output, but the {self.pick} number is"
            msg += f" {got.text!r}: put the final answer {self.pick}"
        return Score(0.0, False, msg)


__all__ = [
    "BaseScorer",
    "ExactScorer",
    "NormalizedScorer",
    "NumericScorer",
    "TokenF1Scorer",
    "best",
    "references",
]
