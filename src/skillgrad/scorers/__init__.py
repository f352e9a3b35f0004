"""The loss functions: built-in scorers by short name, and ``build_scorer`` for config specs.

A spec is a name (``"numeric"``), a dict (``{name: numeric, tolerance: 0.01}``), a
``module:attr`` / ``file.py:attr`` (a Scorer class, a scorer object, or a plain function
``f(output, item) -> Score | float | bool``), or a name registered in the entry-point group
``skillgrad.scorers``. The classes live in ``scorers_text``, ``scorers_pattern``,
``scorers_structured`` and ``scorers_delegate``; this module only names them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.models.base import ModelBackend
from skillgrad.scorers.base import BaseScorer, Scorer
from skillgrad.scorers.callables import CallableScorer, CodeTestsScorer
from skillgrad.scorers.judge import LLMJudgeScorer
from skillgrad.scorers.pattern import ContainsScorer, RegexScorer
from skillgrad.scorers.structured import ChoiceScorer, JsonFieldsScorer
from skillgrad.scorers.text import ExactScorer, NormalizedScorer, NumericScorer, TokenF1Scorer

SCORERS: dict[str, type[BaseScorer]] = {
    "exact": ExactScorer,
    "normalized": NormalizedScorer,
    "token_f1": TokenF1Scorer,
    "numeric": NumericScorer,
    "choice": ChoiceScorer,
    "regex": RegexScorer,
    "contains": ContainsScorer,
    "json_fields": JsonFieldsScorer,
    "code_tests": CodeTestsScorer,
    "llm_judge": LLMJudgeScorer,
    "callable": CallableScorer,
}


def parse_scorer_spec(spec: str | dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``"numeric"`` or ``{name: numeric, tolerance: 0.01}`` -> ``("numeric", {...})``."""
    if isinstance(spec, str):
        if not spec.strip():
            raise ConfigError("scorer is empty: give a name such as 'exact' or 'numeric'")
        return spec.strip(), {}
    if isinstance(spec, dict):
        options = dict(spec)
        name = options.pop("name", None)
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"scorer {spec!r} has no 'name': write e.g. {{name: numeric, tolerance: 0.01}}"
            )
        return name, options
    raise ConfigError(f"scorer must be a name or a mapping with 'name', got {type(spec).__name__}")


def build_scorer(
    spec: str | dict[str, Any] | Scorer,
    base_dir: Path | None = None,
    backend: ModelBackend | None = None,
) -> Scorer:
    """Build a scorer from a config spec. ``backend`` is handed to scorers that take one
    (``llm_judge``); ``base_dir`` resolves ``file.py:attr`` paths. Unknown names raise
    ConfigError with a "did you mean" and the list of known scorers."""
    if isinstance(spec, Scorer) and not isinstance(spec, (str, dict)):
        return spec
    from skillgrad.registry import load_scorer  # registry imports this module

    name, options = parse_scorer_spec(spec)
    return load_scorer(name, options, base_dir, backend=backend)


__all__ = [
    "SCORERS",
    "BaseScorer",
    "CallableScorer",
    "ChoiceScorer",
    "CodeTestsScorer",
    "ContainsScorer",
    "ExactScorer",
    "JsonFieldsScorer",
    "LLMJudgeScorer",
    "NormalizedScorer",
    "NumericScorer",
    "RegexScorer",
    "TokenF1Scorer",
    "build_scorer",
    "parse_scorer_spec",
]
