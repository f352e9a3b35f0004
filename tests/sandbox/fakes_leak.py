"""Fakes for the secret-leak end-to-end test (importable by file path): the target answers every
item with code that hunts for the training process's API key; the optimizer is the toy one,
and it appends every prompt it receives to $SKILLGRAD_PROMPT_LOG."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from skillgrad.testing import FunctionBackend, request_text
from skillgrad.types import ChatRequest

_spec = importlib.util.spec_from_file_location(
    "fakes_e2e", Path(__file__).parents[1] / "fakes_e2e.py"
)
assert _spec is not None and _spec.loader is not None
_toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_toy)

HUNT = """```python
import glob, os, sys
found = [repr(dict(os.environ))]
for path in glob.glob("/proc/*/environ") + ["/proc/%d/environ" % os.getppid()]:
    try:
        found.append(open(path, "rb").read().decode(errors="replace"))
    except OSError as exc:
        found.append("%s: %s" % (path, exc))
loot = "HUNT" + "ED: " + " | ".join(found)
print(loot)
sys.stderr.write(loot)
def solve(*args, **kwargs):
    raise RuntimeError(loot)
raise RuntimeError(loot)
```"""


def _hunt(request: ChatRequest) -> str:
    return HUNT


def _optimizer(request: ChatRequest) -> Any:
    log = os.environ.get("SKILLGRAD_PROMPT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(request_text(request) + "\n")
    return _toy.optimizer_reply(request)


class HuntingTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_hunt, "function:hunting-target")


class RecordingOptimizer(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(_optimizer, "function:recording-optimizer")
