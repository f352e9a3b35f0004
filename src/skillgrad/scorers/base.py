"""The Scorer Protocol, ``BaseScorer`` (the base of the built-in scorers) and ``as_scorer``.

A scorer turns one output into a Score with feedback that says why. The library calls every
scorer through the full ``Scorer`` protocol; a user's object that only has
``score(output, item)`` is made one by ``as_scorer``, the one place that fills the defaults.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Protocol, runtime_checkable

from skillgrad.errors import ConfigError
from skillgrad.models.base import ModelBackend
from skillgrad.scorers.textnorm import short
from skillgrad.types import Item, Score


@runtime_checkable
class ScoresOutputs(Protocol):
    """The least a scorer must have: ``score(output, item) -> Score`` (what users write)."""

    def score(self, output: str, item: Item) -> Score: ...


@runtime_checkable
class Scorer(Protocol):
    """Contract: ``score(output, item)`` returns a Score with ``value`` in [0, 1], ``passed``, and
    feedback text that tells the optimizer *why* (expected vs got), never only a number. It
    never raises on odd output (empty, unicode, huge): that is a low score with feedback.

    - ``ascore(output, item)``: the same, awaitable; the way tasks call a scorer. Scorers that
      call a model or a sandbox implement it; ``BaseScorer`` gives sync scorers one.
    - ``deterministic``: the same output always gets the same score (False for an LLM judge).
    - ``bind(backend)``: receive the run's judge model (a no-op unless the scorer calls one).
    - ``check_reference(reference)``: why a dataset reference cannot be scored, or None.
    """

    name: str
    deterministic: bool

    def score(self, output: str, item: Item) -> Score: ...

    async def ascore(self, output: str, item: Item) -> Score: ...

    def bind(self, backend: ModelBackend) -> None: ...

    def check_reference(self, reference: Any) -> str | None: ...


class BaseScorer:
    """Shared guard rails: a missing reference or an empty output is a 0 score with feedback."""

    name = "base"
    deterministic = True
    needs_reference = True
    checker_internals = False
    """True when ``describe`` quotes the checker itself (a pattern), not only the reference:
    then feedback never quotes it and ``Score.evidence`` does (the verifier-leak firewall)."""

    def score(self, output: str, item: Item) -> Score:
        if self.needs_reference and item.reference is None:
            return Score(
                0.0,
                False,
                f"cannot score: item {item.id!r} has no reference (None); "
                "check the dataset's reference field",
            )
        text = output if isinstance(output, str) else ("" if output is None else str(output))
        if not text.strip():
            expected = f"expected {self.describe(item)}"
            if self.checker_internals:  # the description quotes the checker: evidence only
                return Score(0.0, False, "empty output", evidence=expected)
            return Score(0.0, False, f"empty output; {expected}")
        result = self._score(text, item)
        value = min(1.0, max(0.0, float(result.value)))
        return Score(value, result.passed, result.feedback, result.evidence)

    def describe(self, item: Item) -> str:
        """What a correct answer looks like, for feedback on an empty output."""
        return short(item.reference)

    async def ascore(self, output: str, item: Item) -> Score:
        """``score`` as a coroutine (scorers that await a model or a sandbox override it)."""
        return self.score(output, item)

    def bind(self, backend: ModelBackend) -> None:
        """Receive the run's judge model: a no-op for scorers that call none."""
        return None

    def check_reference(self, reference: Any) -> str | None:
        """Why a dataset reference cannot be scored by this scorer, or None if it can."""
        return None

    def _score(self, output: str, item: Item) -> Score:
        raise NotImplementedError


def run_sync(awaitable: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaitable)
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    raise ConfigError("this scorer is async inside a running event loop: use `await ascore(...)`")


class _AdaptedScorer:
    """A user's scorer with only some of the abilities, completed with the defaults: async
    scoring runs ``score`` unless the object has its own ``ascore``; deterministic unless it says
    otherwise; ``bind`` and ``check_reference`` are used when present, else no-ops."""

    def __init__(self, inner: ScoresOutputs) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", None) or type(inner).__name__)
        self.deterministic = bool(getattr(inner, "deterministic", True))

        # a scorer that says its feedback is evidence (``feedback_is_evidence = True``): the
        # optimizer reads only pass/fail; plain feedback is learning-safe otherwise
        self.feedback_is_evidence = bool(getattr(inner, "feedback_is_evidence", False))

    def _firewall(self, score: Score) -> Score:
        if not self.feedback_is_evidence or not score.feedback:
            return score
        evidence = "\n".join(x for x in (score.feedback, score.evidence) if x)
        verdict = "passed" if score.passed else "failed"
        return Score(score.value, score.passed, f"{verdict} (feedback withheld)", evidence)

    def score(self, output: str, item: Item) -> Score:
        return self._firewall(self.inner.score(output, item))

    async def ascore(self, output: str, item: Item) -> Score:
        own = getattr(self.inner, "ascore", None)
        if own is None:
            return self._firewall(self.inner.score(output, item))
        result: Score = await own(output, item)
        return self._firewall(result)

    def bind(self, backend: ModelBackend) -> None:
        bind = getattr(self.inner, "bind", None)
        if callable(bind):
            bind(backend)

    def check_reference(self, reference: Any) -> str | None:
        check = getattr(self.inner, "check_reference", None)
        return check(reference) if callable(check) else None


def as_scorer(obj: ScoresOutputs) -> Scorer:
    """``obj`` as a full ``Scorer``: itself when it already is one (every ``BaseScorer``), else
    wrapped so callers never probe for optional abilities. The one place defaults are filled."""
    if isinstance(obj, (BaseScorer, Scorer)) and not getattr(obj, "feedback_is_evidence", False):
        return obj
    return _AdaptedScorer(obj)  # also puts a scorer's evidence-only feedback behind the firewall


__all__ = ["BaseScorer", "Scorer", "ScoresOutputs", "as_scorer", "run_sync"]
