"""Fakes for the trust tests (importable by file path, built on ``skillgrad.testing``).

- ``OldFormatOptimizer``: answers every reflection in an older reply format
  (``{"edits": [...]}`` instead of ``{"rules": [...]}``): every reflection fails validation.
- ``NoisyTarget``: a nondeterministic target. Each request's answer is a coin flip (upper case:
  right; as given: wrong) drawn from the request's sampling seed, skill and word, so the same
  request always gets the same answer (the call cache stays coherent) but a new seed or any
  change of the skill draws again, whatever the skill says.
- ``NeutralOptimizer``: proposes a rule that changes nothing for any target, a new one each call.
- ``PerfectTarget``: answers every item right, with or without a skill (a saturated split).
- ``CheckedToy`` and ``PatternCopyingOptimizer``: a task whose checker's pattern is evidence
  only, and an optimizer that writes that pattern into a rule anyway.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path
from typing import Any

from skillgrad.testing import (
    FunctionBackend,
    ToyTask,
    optimizer_call_kind,
    system_text,
    user_text,
)
from skillgrad.types import ChatRequest, Item, Score

_spec = importlib.util.spec_from_file_location(
    "fakes_e2e", Path(__file__).parents[1] / "fakes_e2e.py"
)
assert _spec is not None and _spec.loader is not None
_toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_toy)

FAKES_PATH = Path(__file__).resolve()
OLD_FORMAT = {"edits": [{"op": "add", "section": "", "content": _toy.GOOD_RULE}]}


def _old_format(request: ChatRequest) -> Any:
    if optimizer_call_kind(request) in ("reflect", "deep_reflect"):
        return OLD_FORMAT
    return _toy.optimizer_reply(request)


class OldFormatOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_old_format, "function:old-format-optimizer")


def _word(request: ChatRequest) -> str:
    return user_text(request).removeprefix("Word: ").strip()


def _coin(request: ChatRequest) -> bool:
    key = f"{request.seed}|{system_text(request)}|{_word(request)}"
    return hashlib.sha256(key.encode()).digest()[0] < 128


def _noisy(request: ChatRequest) -> str:
    word = _word(request)
    return word.upper() if _coin(request) else word


class NoisyTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_noisy, "function:noisy-target")


def _neutral(request: ChatRequest) -> Any:
    kind = optimizer_call_kind(request)
    if kind in ("reflect", "deep_reflect"):
        n = int(hashlib.sha256(user_text(request).encode()).hexdigest()[:6], 16) % 10_000
        return {"rules": [{"rule": f"Keep the reply on one line (note {n})."}]}
    return _toy.optimizer_reply(request)


class NeutralOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_neutral, "function:neutral-optimizer")


class PerfectTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(lambda r: _word(r).upper(), "function:perfect-target")


PATTERN = r"^[A-Z]{3,12}$"
"""The checker's pattern of ``CheckedToy``: evidence, never feedback."""


class CheckedToy(ToyTask):
    """The toy task scored by a checker whose pattern and gold answer are evidence only."""

    def score(self, output: str, item: Item) -> Score:
        got = output.strip()
        ok = re.fullmatch(PATTERN, got) is not None and got == item.reference
        evidence = f"checker pattern /{PATTERN}/; gold answer {item.reference}"
        feedback = "correct" if ok else "the answer does not have the required form"
        return Score(float(ok), ok, feedback, evidence)


def _copier(request: ChatRequest) -> Any:
    """Proposes a rule quoting the checker's pattern (as an optimizer that had read it)."""
    if optimizer_call_kind(request) in ("reflect", "deep_reflect"):
        return {"rules": [{"rule": f"The answer must match {PATTERN} exactly."}]}
    return _toy.optimizer_reply(request)


class PatternCopyingOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_copier, "function:pattern-copying-optimizer")
