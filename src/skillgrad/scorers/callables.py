"""Scorers that hand the judgement to something else: ``code_tests`` (the code sandbox),
``llm_judge`` (a model with a rubric, async) and ``callable`` (any Python function).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.plugins import resolve_object
from skillgrad.scorers.base import BaseScorer, run_sync
from skillgrad.scorers.textnorm import fenced_blocks
from skillgrad.types import Item, Score


def as_score(result: Any, pass_threshold: float = 0.5, source: str = "scorer") -> Score:
    """A Score from what a delegate returned: Score, bool, number, or a test report
    (dict or object with ``passed``/``total`` counts and optional ``feedback``/``output``)."""
    if isinstance(result, Score):
        return Score(min(1.0, max(0.0, result.value)), result.passed, result.feedback)
    if isinstance(result, bool):
        return Score(float(result), result, f"{source} returned {result}")
    if isinstance(result, (int, float)):
        value = min(1.0, max(0.0, float(result)))
        return Score(value, value >= pass_threshold, f"{source} returned {value:.3g}")
    if hasattr(result, "tests_total") and hasattr(result, "summary"):  # the sandbox's result
        n_total, n_passed, ran_ok = int(result.tests_total), int(result.tests_passed), result.passed
        fraction = n_passed / n_total if n_total else float(bool(ran_ok))
        return Score(fraction, bool(ran_ok) and n_passed == n_total, str(result.summary()))
    get = result.get if isinstance(result, dict) else lambda k, d=None: getattr(result, k, d)
    passed, total = get("passed"), get("total")
    if isinstance(passed, int) and not isinstance(passed, bool) and isinstance(total, int):
        value = passed / total if total else 0.0
        ok = total > 0 and passed == total
    elif isinstance(passed, bool):
        value, ok = float(passed), passed
    else:
        raise TypeError(f"{source} returned {type(result).__name__}; expected Score/bool/float")
    detail = get("feedback") or get("output") or get("error") or ""
    head = f"{passed}/{total} tests passed" if total is not None else f"passed={passed}"
    return Score(value, ok, f"{head}; {str(detail)[:1500]}" if detail else head)


class CodeTestsScorer(BaseScorer):
    """Run the code in the output (last fenced python block, else the whole text) against the
    item's tests (``tests_field`` in the input, else the reference) in the code sandbox
    (``skillgrad.sandbox.run_tests``); ``entry_point_field`` names the input field holding
    the function to test (HumanEval's ``entry_point``); ``sandbox: unsandboxed`` opts out of the
    box by name."""

    name = "code_tests"

    def __init__(
        self,
        timeout_s: float = 10.0,
        memory_mb: int = 512,
        tests_field: str | None = None,
        entry_point_field: str | None = None,
        sandbox: str = "bubblewrap",
    ) -> None:
        self.timeout_s, self.memory_mb, self.tests_field = timeout_s, memory_mb, tests_field
        self.entry_point_field = entry_point_field
        self.needs_reference = tests_field is None
        self.sandbox = importlib.import_module("skillgrad.sandbox").preflight(sandbox)

    def _runner(self) -> Callable[..., Any]:
        try:
            module = importlib.import_module("skillgrad.sandbox")
            return module.run_tests
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                "scorer 'code_tests' needs skillgrad.sandbox.run_tests(code, tests, "
                f"timeout_s, memory_mb), which is not available in this install: {exc}"
            ) from exc

    def _call(self, output: str, item: Item) -> tuple[Any, Score | None]:
        tests = item.reference
        if self.tests_field is not None:
            tests = item.input.get(self.tests_field) if isinstance(item.input, dict) else None
            if tests is None:
                return None, Score(0.0, False, f"cannot score: no {self.tests_field!r} in input")
        blocks = fenced_blocks(output, ("python", "py", "python3"))
        code = blocks[-1] if blocks else output
        extra: dict[str, Any] = {"mode": self.sandbox}
        if self.entry_point_field and isinstance(item.input, dict):
            extra["entry_point"] = item.input.get(self.entry_point_field)
        result = self._runner()(code, tests, self.timeout_s, self.memory_mb, **extra)
        return result, None

    def _score(self, output: str, item: Item) -> Score:
        result, early = self._call(output, item)
        if early is not None:
            return early
        if inspect.isawaitable(result):
            result = run_sync(result)
        return as_score(result, 1.0, "code tests")

    async def ascore(self, output: str, item: Item) -> Score:
        if not (output or "").strip() or (self.needs_reference and item.reference is None):
            return self.score(output, item)
        result, early = await asyncio.to_thread(self._call, output, item)
        if early is not None:
            return early
        if inspect.isawaitable(result):
            result = await result
        return as_score(result, 1.0, "code tests")


class CallableScorer(BaseScorer):
    """Any function ``f(output, item) -> Score | float | bool`` given as ``function``
    (``module:attr`` or ``file.py:attr``, relative to ``base_dir``). A float passes at
    ``pass_threshold``. The function sees empty outputs and None references itself."""

    name = "callable"
    needs_reference = False

    def __init__(
        self,
        function: str | Callable[[str, Item], Any],
        base_dir: Path | None = None,
        pass_threshold: float = 0.5,
    ) -> None:
        if isinstance(function, str):
            function = resolve_object(function, base_dir)
        if not callable(function):
            raise ConfigError(f"callable scorer: {function!r} is not callable")
        self.function, self.pass_threshold = function, pass_threshold
        self.label = getattr(function, "__name__", "function")

    def score(self, output: str, item: Item) -> Score:
        result = self.function("" if output is None else output, item)
        return as_score(result, self.pass_threshold, self.label)


__all__ = ["CallableScorer", "CodeTestsScorer", "as_score"]
