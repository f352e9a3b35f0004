"""The loss functions, and ``build_scorer`` for config specs.

A spec is a name registered in the entry-point group ``skillgrad.scorers`` (``"numeric"``; the
built-ins are registered in skillgrad's own pyproject exactly like a third-party scorer), a dict
(``{name: numeric, tolerance: 0.01}``), or a ``module:attr`` / ``file.py:attr`` (a Scorer
class, a scorer object, or a plain function ``f(output, item) -> Score | float | bool``). The
classes live in ``text``, ``pattern``, ``structured``, ``judge`` and ``callables`` (the protocol
in ``base``); this module looks them up.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.models.base import ModelBackend
from skillgrad.plugins import call_factory, load_plugin, plugin_names
from skillgrad.scorers.base import BaseScorer, Scorer, ScoresOutputs, as_scorer
from skillgrad.scorers.callables import CallableScorer, CodeTestsScorer
from skillgrad.scorers.judge import LLMJudgeScorer
from skillgrad.scorers.pattern import ContainsScorer, RegexScorer
from skillgrad.scorers.structured import ChoiceScorer, JsonFieldsScorer
from skillgrad.scorers.text import ExactScorer, NormalizedScorer, NumericScorer, TokenF1Scorer

SCORER_GROUP = "skillgrad.scorers"


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


def scorer_names() -> list[str]:
    """Every scorer registered in the ``skillgrad.scorers`` group (built-ins included)."""
    return plugin_names(SCORER_GROUP)


def load_scorer(
    name: str,
    options: dict[str, Any] | None = None,
    base_dir: Path | None = None,
    backend: ModelBackend | None = None,
) -> Scorer:
    """Build scorer ``name`` (an entry point, or ``module:attr``) with ``options``.
    A plain function found by ``module:attr`` is wrapped in the ``callable`` scorer."""
    options = dict(options or {})
    target = load_plugin(SCORER_GROUP, name, "scorer", paths=True, base_dir=base_dir)
    if isinstance(target, ScoresOutputs) and not inspect.isclass(target):
        if options:
            raise ConfigError(f"scorer {name!r} is an object; it takes no options {options}")
        return as_scorer(target)
    what = f"scorer {name!r}"
    if inspect.isclass(target):
        scorer = call_factory(target, options, what, base_dir=base_dir, backend=backend)
    elif callable(target):
        fn_options = {"function": target, **options}
        scorer = call_factory(CallableScorer, fn_options, what, base_dir=base_dir)
    else:
        raise ConfigError(f"{name!r} is neither a Scorer class, a scorer, nor a function")
    if not isinstance(scorer, ScoresOutputs):
        raise ConfigError(f"{name!r} did not produce a Scorer (needs score(output, item))")
    return as_scorer(scorer)


def build_scorer(
    spec: str | dict[str, Any] | ScoresOutputs,
    base_dir: Path | None = None,
    backend: ModelBackend | None = None,
) -> Scorer:
    """Build a scorer from a config spec (a name, ``{name: ..., **options}``, or a scorer
    object). ``backend`` is handed to scorers that take one (``llm_judge``); ``base_dir``
    resolves ``file.py:attr`` paths. Unknown names raise ConfigError with a "did you mean" and
    the list of known scorers. The result is a full ``Scorer`` (see ``as_scorer``)."""
    if isinstance(spec, ScoresOutputs) and not isinstance(spec, (str, dict)):
        return as_scorer(spec)
    name, options = parse_scorer_spec(spec)
    return load_scorer(name, options, base_dir, backend=backend)


__all__ = [
    "SCORER_GROUP",
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
    "load_scorer",
    "parse_scorer_spec",
    "scorer_names",
]
