"""Hostile model replies and a scorer that raises (issue 24), importable by file path.

- ``DeepOptimizer``: every optimizer call answered with ``{"rules": `` and 1,000 ``[`` (a small
  model writes ``[[`` as one token, so this fits its default token limit).
- ``NestedTextTarget`` / ``NestedNativeTarget``: a tool-use target that calls ``lookup_price``
  with arguments nested 1,000 deep, through the text protocol or native tool calls.
- ``HalfDownTarget``: a tool-use target whose endpoint is down for the stock questions and
  that answers the price questions.
- ``HostileBfclTarget``: BFCL replies that parse but break a naive reader, one per item.
- ``RaisingToyTask``: the toy task whose scorer raises on every reply.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakes_e2e import optimizer_reply
from skillgrad.errors import TransientModelError
from skillgrad.testing import FunctionBackend, ToyTask, optimizer_call_kind, user_text
from skillgrad.types import ChatRequest, Completion, Item, Score

DEPTH = 1000
DEEP_RULES = '{"rules": ' + "[" * DEPTH
DEEP_ARGUMENTS = '{"item": ' + "[" * DEPTH


def deep_optimizer_reply(request: ChatRequest) -> object:
    """The deep reply to every optimizer call. With ``$FAKE_DIE_ON_REASK`` naming a file that
    does not exist yet, the process dies (once) when asked again: the first reply is then in
    the run's call cache, as it was for every resume of a run killed by it."""
    marker = os.environ.get("FAKE_DIE_ON_REASK")
    if marker and len(request.messages) > 2 and not Path(marker).exists():
        Path(marker).touch()
        os._exit(9)
    if optimizer_call_kind(request) is not None:
        return DEEP_RULES
    return optimizer_reply(request)


class DeepOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(deep_optimizer_reply, "function:deep-optimizer")


class NestedTextTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(lambda r: f"CALL lookup_price {DEEP_ARGUMENTS}", "function:nested-text")


def _native(request: ChatRequest) -> Completion:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup_price", "arguments": DEEP_ARGUMENTS},
    }
    return Completion(text="", tool_calls=(call,))


class NestedNativeTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_native, "function:nested-native")


def _half_down(request: ChatRequest) -> str:
    """Down for the questions about stock; a (wrong) final answer for the price questions."""
    if "in stock" in user_text(request):
        raise TransientModelError("fake endpoint down (connection refused)")
    return "FINAL: 0"


class HalfDownTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_half_down, "function:half-down")


HOSTILE_BFCL = (
    "f(a=" + ".".join(["x"] * 400) + ")",  # ~800 characters of attribute chain
    "f(a=g" + "()" * 400 + ")",
    "f(a=x" + "[0]" * 400 + ")",
    "f(a=" + "+".join(["1"] * 1200) + ")",
    "f(a={[1]: 2})",
    "f(a=0x" + "f" * 4000 + ")",
)


def _bfcl(request: ChatRequest) -> str:
    """One hostile reply per question, chosen by the question's text (stable across runs)."""
    text = user_text(request)
    return HOSTILE_BFCL[sum(map(ord, text)) % len(HOSTILE_BFCL)]


class HostileBfclTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_bfcl, "function:hostile-bfcl")


@dataclass
class RaisingToyTask(ToyTask):
    """The toy task with a scorer that raises on every reply (as a third-party scorer might
    on output it never expected)."""

    name: str = "raising_toy"
    family: ClassVar[str] = "toy"

    def score(self, output: str, item: Item) -> Score:
        raise TypeError(f"unhashable type: 'list' (while reading {output[:20]!r})")
