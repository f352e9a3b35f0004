"""Fake models for sweep tests: the e2e fakes (tests/fakes_e2e.py) plus a per-sweep call log.

``options: {latency: S, log: PATH}``: every completed call appends ``role sha256(request)`` to
PATH, so a test can count what a whole sweep paid for across processes and machines.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))

from fakes_e2e import optimizer_reply, target_reply
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest


def _logged(fn: Any, role: str, log: str) -> Any:
    def wrapped(request: ChatRequest) -> Any:
        reply = fn(request)
        if log:
            key = hashlib.sha256(json.dumps(request.cache_payload(), sort_keys=True).encode())
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{role} {key.hexdigest()}\n")
        return reply

    return wrapped


class Target(FunctionBackend):
    def __init__(self, latency: float = 0.0, log: str = "") -> None:
        super().__init__(_logged(target_reply, "target", log), "function:fake-target", latency)


class Optimizer(FunctionBackend):
    def __init__(self, latency: float = 0.0, log: str = "") -> None:
        super().__init__(
            _logged(optimizer_reply, "optimizer", log), "function:fake-optimizer", latency
        )
