"""Fakes whose optimizer writes rules holding every character that breaks a line for
``str.splitlines`` (U+2028, U+2029, U+0085, the ASCII separators) and other Unicode
(importable by file path); the target and the rest of the optimizer are the toy ones."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest

_spec = importlib.util.spec_from_file_location(
    "fakes_e2e", Path(__file__).with_name("fakes_e2e.py")
)
assert _spec is not None and _spec.loader is not None
_toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_toy)

BREAKERS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e"
RULE = f"Always answer with the word in UPPERCASE.{BREAKERS}Ünïcödé 🐍 \u200b\ufeff end."


def _swap(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(_toy.GOOD_RULE, RULE)
    if isinstance(value, dict):
        return {k: _swap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v) for v in value]
    return value


def _optimizer(request: ChatRequest) -> Any:
    return _swap(_toy.optimizer_reply(request))


class UnicodeOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_optimizer, "function:unicode-optimizer")


class ToyTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_toy.target_reply, "function:toy-target")
