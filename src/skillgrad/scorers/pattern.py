"""Pattern scorers: ``regex`` (the output matches a pattern) and ``contains`` (the output holds
given phrases, with partial credit). Patterns and phrases come from options or the reference.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from skillgrad.errors import ConfigError
from skillgrad.scorers.base import BaseScorer
from skillgrad.scorers.text import best, references
from skillgrad.scorers.textnorm import nfkc, short, squash_spaces, strip_accents
from skillgrad.types import Item, Score


class RegexScorer(BaseScorer):
    """The output (NFKC, trimmed) matches ``pattern``, or the reference used as a pattern (a list
    reference: any of several patterns). ``mode`` fullmatch (default) or search; ``ignore_case``."""

    name = "regex"
    checker_internals = True  # describe() quotes the pattern: evidence, not feedback

    def __init__(
        self,
        pattern: str | None = None,
        mode: Literal["fullmatch", "search"] = "fullmatch",
        ignore_case: bool = False,
    ) -> None:
        if mode not in ("fullmatch", "search"):
            raise ConfigError(f"regex mode must be 'fullmatch' or 'search', got {mode!r}")
        self.mode, self.flags = mode, re.IGNORECASE if ignore_case else 0
        self.pattern = self._compile(pattern) if pattern is not None else None
        self.needs_reference = pattern is None

    def _compile(self, pattern: str) -> re.Pattern[str]:
        try:
            return re.compile(pattern, self.flags)
        except re.error as exc:
            raise ConfigError(f"regex scorer: invalid pattern {pattern!r}: {exc}") from exc

    def check_reference(self, reference: Any) -> str | None:
        if self.pattern is not None:
            return None
        for ref in references(reference):
            try:
                re.compile(ref)
            except re.error as exc:
                return f"reference {short(ref)} is not a valid regex: {exc}"
        return None

    def describe(self, item: Item) -> str:
        pats = [self.pattern.pattern] if self.pattern is not None else references(item.reference)
        return "text matching " + " or ".join(f"/{p}/" for p in pats)

    def _score(self, output: str, item: Item) -> Score:
        if self.pattern is not None:
            return self._one(output, self.pattern)
        try:
            patterns = [self._compile(ref) for ref in references(item.reference)]
        except ConfigError as exc:
            return Score(0.0, False, f"cannot score: {exc}")
        return best([self._one(output, p) for p in patterns])

    def _one(self, output: str, pattern: re.Pattern[str]) -> Score:
        text = nfkc(output).strip()
        match = pattern.fullmatch(text) if self.mode == "fullmatch" else pattern.search(text)
        evidence = f"checker pattern /{pattern.pattern}/ ({self.mode})"
        if match:  # the pattern is the checker's: evidence, never feedback (the firewall)
            return Score(1.0, True, "matches the required form", evidence)
        hint = ""
        if self.mode == "fullmatch" and pattern.search(text):
            hint = " (a part of it matches: drop the extra text around the answer)"
        verb = "does not fully match" if self.mode == "fullmatch" else "does not contain"
        return Score(0.0, False, f"output {short(text)} {verb} the required form{hint}", evidence)


class ContainsScorer(BaseScorer):
    """The output contains ``all`` (partial credit per phrase) or ``any`` of ``phrases`` (or the
    reference: a string or a list). Case- and accent-insensitive unless ``case_sensitive``."""

    name = "contains"

    def __init__(
        self,
        phrases: list[str] | None = None,
        mode: Literal["all", "any"] = "all",
        case_sensitive: bool = False,
    ) -> None:
        if mode not in ("all", "any"):
            raise ConfigError(f"contains mode must be 'all' or 'any', got {mode!r}")
        self.phrases, self.mode, self.case_sensitive = phrases, mode, case_sensitive
        self.needs_reference = phrases is None

    def _prep(self, text: str) -> str:
        text = squash_spaces(nfkc(text))
        return text if self.case_sensitive else strip_accents(text).casefold()

    def _score(self, output: str, item: Item) -> Score:
        phrases = self.phrases if self.phrases is not None else references(item.reference)
        if not phrases:
            return Score(0.0, False, "cannot score: no phrases to look for")
        text = self._prep(output)
        found = [p for p in phrases if self._prep(p) in text]
        missing = [p for p in phrases if p not in found]
        if self.mode == "any":
            if found:
                return Score(1.0, True, f"contains {short(found[0])}")
            listed = ", ".join(short(p) for p in phrases[:8])
            return Score(0.0, False, f"output contains none of: {listed}")
        value = len(found) / len(phrases)
        if not missing:
            return Score(1.0, True, f"contains all {len(phrases)} phrase(s)")
        listed = ", ".join(short(p) for p in missing[:8])
        return Score(value, False, f"found {len(found)}/{len(phrases)}; missing: {listed}")


__all__ = ["ContainsScorer", "RegexScorer"]
