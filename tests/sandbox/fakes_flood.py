"""Fakes for the bounded-output end-to-end test (importable by file path): the target answers
every code item with the function it asks for, raising an exception of 2.9 million characters
(and printing as much); the optimizer is the toy one."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from skillgrad.testing import FunctionBackend, user_text
from skillgrad.types import ChatRequest

_spec = importlib.util.spec_from_file_location(
    "fakes_e2e", Path(__file__).parents[1] / "fakes_e2e.py"
)
assert _spec is not None and _spec.loader is not None
_toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_toy)

FLOOD = """```python
import sys
print("P" * 2_900_000)
sys.stderr.write("E" * 2_900_000)
def {name}(*args):
    raise ValueError("A" * 2_900_000)
```"""


def _flood(request: ChatRequest) -> str:
    found = re.search(r"`(\w+)\(", user_text(request))
    return FLOOD.format(name=found.group(1) if found else "solve")


class FloodingTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_flood, "function:flooding-target")


class ToyOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_toy.optimizer_reply, "function:toy-optimizer")
