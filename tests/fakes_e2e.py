"""Deterministic fake models for end-to-end training tests (importable by file path).

Task: ``skillgrad.testing.ToyTask`` (echo the word in UPPER CASE). The fake target answers in
upper case only when the skill contains the rule "UPPERCASE" and no rule "lowercase". The fake
optimizer first proposes a harmful rule ("Reply in lowercase only."); once that rule shows up in
the rejected-edit buffer of its prompt, it proposes the helpful one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from skillgrad.errors import TransientModelError
from skillgrad.testing import (
    FunctionBackend,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.types import ChatRequest

FAKES_PATH = Path(__file__).resolve()  # for configs naming these fakes (provider: function)
GOOD_RULE = "Always answer with the word in UPPERCASE."
BAD_RULE = "Reply in lowercase only."
NEUTRAL_RULE = "Answer with the word only."  # changes nothing for the fake target
RULES_ONLY = {"examples": "off", "explore": "off"}
"""``train`` settings of a test of the rule path (reflect, screens, gate, revise, leaks): worked
examples and exploration are on by default and have their own tests (``tests/train/
test_examples.py``, ``test_explore.py``)."""


def target_reply(request: ChatRequest) -> str:
    if os.environ.get("FAKE_TARGET_DOWN"):
        raise TransientModelError("fake endpoint down (connection refused)")
    skill = system_text(request)
    word = user_text(request).removeprefix("Word: ").strip()
    if "lowercase" in skill.lower():
        return word.lower()
    return word.upper() if "UPPERCASE" in skill else word


def _rejected_section(prompt: str) -> str:
    m = re.search(r"## Rules rejected before.*?\n(.*?)\n## ", prompt, re.DOTALL)
    return m.group(1) if m else ""


def optimizer_reply(request: ChatRequest) -> dict[str, Any] | str:
    prompt = user_text(request)
    kind = optimizer_call_kind(request)
    if kind == "merge":  # semantic merge: every edit is its own group
        return {"groups": [[i] for i in range(len(re.findall(r"^\[\d+\]", prompt, re.M)))]}
    if kind == "rank":
        return {"order": [0, 1, 2, 3]}
    if kind == "slow_update":
        return {"rules": ["Keep answering with the single word in upper case."]}
    if kind == "meta_skill":
        return {"memo": "Format rules about letter case helped; lowercase rules hurt."}
    if kind == "revise":  # like the 1.5B: its own rule back, unchanged
        shown = re.search(r"does not follow\n- (.*)", prompt)
        return rules_reply(
            shown.group(1) if shown else NEUTRAL_RULE, replaces=shown.group(1) if shown else ""
        )
    if kind in ("reflect", "deep_reflect"):
        return rules_reply(GOOD_RULE if BAD_RULE in _rejected_section(prompt) else BAD_RULE)
    raise AssertionError(f"unexpected optimizer prompt: {prompt[:300]}")


def _logged(fn: Any, role: str) -> Any:
    """Append a hash of each *completed* call to $SKILLGRAD_CALL_LOG (for the kill test)."""
    path = os.environ.get("SKILLGRAD_CALL_LOG")

    def wrapped(request: ChatRequest) -> Any:
        reply = fn(request)
        if path:
            key = hashlib.sha256(json.dumps(request.cache_payload(), sort_keys=True).encode())
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(f"{role} {key.hexdigest()}\n")
        return reply

    return wrapped


class FakeTarget(FunctionBackend):
    def __init__(self, latency: float = 0.0) -> None:
        super().__init__(_logged(target_reply, "target"), "function:fake-target", latency)


class FakeOptimizer(FunctionBackend):
    def __init__(self, latency: float = 0.0) -> None:
        super().__init__(_logged(optimizer_reply, "optimizer"), "function:fake-optimizer", latency)


class FakeCheckTarget(FunctionBackend):
    """Another target for ``train.check_targets``: answers in upper case with or without a
    skill, except that when the skill holds ``breaks_on`` it answers the words listed in
    ``spoil`` (every word when the list is empty) in lower case — so that rule costs it; with
    ``needs``, in upper case only when the skill holds that text (a line only it follows)."""

    def __init__(
        self,
        breaks_on: str = "",
        spoil: list[str] | None = None,
        latency: float = 0.0,
        needs: str = "",
    ) -> None:
        def reply(request: ChatRequest) -> str:
            word = user_text(request).removeprefix("Word: ").strip()
            broken = bool(breaks_on) and breaks_on in system_text(request)
            if broken and (not spoil or word in spoil):
                return word.lower()
            if needs and needs not in system_text(request):
                return word.lower()
            return word.upper()

        kind = f"needs-{needs}" if needs else breaks_on or "steady"
        name = f"function:fake-check-{kind}-{len(spoil or [])}"
        super().__init__(_logged(reply, "check_target"), name, latency)


make_target = FakeTarget
make_optimizer = FakeOptimizer
