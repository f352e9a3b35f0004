"""Fake models for the executor tests (importable by file path).

``Target`` writes code for the ``code`` benchmark: a correct ``sum_multiples`` and
``count_above`` (it reads the constant from the prompt), a wrong stub for every other family, so
per-item scores differ. ``Optimizer`` is the toy optimizer of ``tests/fakes_e2e.py``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from skillgrad.testing import FunctionBackend, user_text
from skillgrad.types import ChatRequest

_spec = importlib.util.spec_from_file_location(
    "fakes_e2e", Path(__file__).parents[1] / "fakes_e2e.py"
)
assert _spec is not None and _spec.loader is not None
_toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_toy)

_NAME = re.compile(r"`(\w+)\(")
_NUMBER = re.compile(r"(?:divisible by|greater than) (-?\d+)")


def code_reply(request: ChatRequest) -> str:
    """A fenced Python answer to one ``code`` benchmark prompt."""
    prompt = user_text(request)
    match = _NAME.search(prompt)
    name = match.group(1) if match else "solve"
    number = _NUMBER.search(prompt)
    if name == "sum_multiples" and number:
        body = f"    return sum(x for x in xs if x % {number.group(1)} == 0)"
    elif name == "count_above" and number:
        body = f"    return sum(1 for x in xs if x > {number.group(1)})"
    else:
        body = "    return None"
    arg = "xs" if name in ("sum_multiples", "count_above") else "*args"
    return f"```python\ndef {name}({arg}):\n{body}\n```"


def _optimizer(request: ChatRequest) -> Any:
    return _toy.optimizer_reply(request)


class Target(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(code_reply, "function:code-target")


class Optimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_optimizer, "function:toy-optimizer")
