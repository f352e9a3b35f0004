"""Fake optimizer whose replies leave code fences open (issue 11 §4), importable by file path.

The shipped e2e optimizer (``fakes_e2e``), except that every proposed edit and the slow update's
guidance end inside an unclosed ``` fence, as a model cut off mid-example would write them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakes_e2e import optimizer_reply
from skillgrad.testing import FunctionBackend, optimizer_call_kind
from skillgrad.types import ChatRequest

OPEN_FENCE = "\n```text\nEXAMPLE OUTPUT"


def fenced_reply(request: ChatRequest) -> dict[str, Any] | str:
    reply = optimizer_reply(request)
    kind = optimizer_call_kind(request)
    if kind == "slow_update" and isinstance(reply, dict):
        return {"rules": [r + OPEN_FENCE for r in reply["rules"]]}
    if kind in ("reflect", "deep_reflect") and isinstance(reply, dict):
        rules = [{**r, "rule": r["rule"] + OPEN_FENCE} for r in reply["rules"]]
        return {**reply, "rules": rules}
    return reply


class FencedOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(fenced_reply, "function:fenced-optimizer")


class CharTokenTarget(FunctionBackend):
    """The e2e fake target with a tokenizer of its own: one token per character."""

    def __init__(self) -> None:
        from fakes_e2e import target_reply

        super().__init__(target_reply, "function:char-token-target")

    def count_tokens(self, text: str) -> int:
        return len(text)
