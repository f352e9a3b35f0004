"""Transfer targets for ``skillgrad transfer`` tests: fake models that answer the toy task unlike
the sweep's own fake target (tests/fakes_e2e.py: upper case exactly when the skill says
UPPERCASE), so each cell of the matrix is known from the words of each run's own test split.

- ``Picky``: upper case for a word with an even number of letters when the skill does not say
  UPPERCASE, and for a word holding an ``e`` when it does.
- ``Steady``: upper case whatever the skill (initial and best both score 1).

Every completed call appends ``name word`` to ``$TRANSFER_CALL_LOG`` (when set), and sleeps
``$TRANSFER_LATENCY`` seconds first, so a test can count calls and stop a run mid-way.
"""

from __future__ import annotations

import os
import time

from skillgrad.testing import FunctionBackend, system_text, user_text
from skillgrad.types import ChatRequest


def picky_passes(word: str, skill: str) -> bool:
    """Whether ``Picky`` answers ``word`` right under ``skill``."""
    return "e" in word if "UPPERCASE" in skill else len(word) % 2 == 0


def _answer(name: str, request: ChatRequest, right: bool) -> str:
    word = user_text(request).removeprefix("Word: ").strip()
    time.sleep(float(os.environ.get("TRANSFER_LATENCY", "0")))
    log = os.environ.get("TRANSFER_CALL_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{name} {word}\n")
    return word.upper() if right else word.lower()


class Picky(FunctionBackend):
    def __init__(self) -> None:
        def reply(request: ChatRequest) -> str:
            word = user_text(request).removeprefix("Word: ").strip()
            return _answer("picky", request, picky_passes(word, system_text(request)))

        super().__init__(reply, "function:fake-picky")


class Steady(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(lambda r: _answer("steady", r, True), "function:fake-steady")


class Copycat(FunctionBackend):
    """Upper case exactly when the skill shows a worked example's reply (a ``Reply:`` line):
    a target that copies a demonstration and ignores a rule in words."""

    def __init__(self) -> None:
        def reply(request: ChatRequest) -> str:
            shown = any(x.startswith("Reply:") for x in system_text(request).split("\n"))
            return _answer("copycat", request, shown)

        super().__init__(reply, "function:fake-copycat")
