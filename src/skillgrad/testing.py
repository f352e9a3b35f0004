"""Test doubles that ship with skillgrad, for your tests and ours.

- ``ScriptedBackend``: strict; answers only the calls it was told to expect, fails on an
  unexpected call, and ``assert_done()`` fails on an expected call that never came.
- ``FunctionBackend``: answers every call with a Python function of the request (it lives in
  ``skillgrad.models.function``; re-exported here).
- ``ToyTask``: a tiny seeded task (echo a word in upper case) with an exact-match scorer.
- ``optimizer_call_kind`` and ``rules_reply``: what a fake optimizer needs to answer each call
  the way the training loop expects, without matching on the prompts' wording.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from skillgrad.benchmarks.generated import GeneratedTask
from skillgrad.models.function import FunctionBackend, as_completion
from skillgrad.prompts import render_prompt
from skillgrad.tasks.base import Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import ChatRequest, Completion, Item, Score


class UnexpectedCall(AssertionError):
    """A strict fake received a call it was not scripted for (or missed one it was)."""


def request_text(request: ChatRequest) -> str:
    """All message contents of a request joined: handy for matching in fakes."""
    return "\n".join(m.content for m in request.messages)


def system_text(request: ChatRequest) -> str:
    """The system prompt (the skill) of a request, or ''."""
    return next((m.content for m in request.messages if m.role == "system"), "")


def user_text(request: ChatRequest) -> str:
    """The last user message of a request, or ''."""
    return next((m.content for m in reversed(request.messages) if m.role == "user"), "")


OPTIMIZER_CALL_KINDS = (
    "reflect",
    "deep_reflect",
    "revise",
    "merge",
    "rank",
    "slow_update",
    "meta_skill",
)


def optimizer_call_kind(request: ChatRequest) -> str | None:
    """Which optimizer call ``request`` is (one of ``OPTIMIZER_CALL_KINDS``), told by its system
    prompt; None for any other request (a target rollout, a judge call)."""
    system = system_text(request)
    for kind in OPTIMIZER_CALL_KINDS:
        if system.startswith(render_prompt(f"{kind}_system").strip()):
            return kind
    return None


def rules_reply(*rules: str, replaces: str = "", section: str = "") -> dict[str, Any]:
    """A reflection reply proposing ``rules`` (the first one may rewrite the skill's line
    ``replaces`` and go under heading ``section``): ``{"rules": [{"rule": ...}, ...]}``."""
    out: list[dict[str, str]] = []
    for i, rule in enumerate(rules):
        entry = {"rule": rule}
        if i == 0 and replaces:
            entry["replaces"] = replaces
        if i == 0 and section:
            entry["section"] = section
        out.append(entry)
    return {"rules": out}


@dataclass
class _Expectation:
    match: Callable[[ChatRequest], bool]
    reply: str | dict[str, Any] | Completion | Callable[[ChatRequest], Any]
    label: str
    used: bool = False


class ScriptedBackend:
    """A strict scripted model: ``expect(match, reply)`` adds one expected call.

    ``match`` is a substring of the request text or a predicate; ``reply`` is text, a dict
    (sent as JSON), a Completion, or a function of the request. Each expectation answers once
    (``times`` adds copies). Calls are matched to the first unused expectation that fits.
    """

    def __init__(self, name: str = "scripted:fake") -> None:
        self.name = name
        self._expected: list[_Expectation] = []
        self.calls: list[ChatRequest] = []

    def expect(
        self,
        match: str | Callable[[ChatRequest], bool],
        reply: str | dict[str, Any] | Completion | Callable[[ChatRequest], Any],
        times: int = 1,
    ) -> ScriptedBackend:
        fn: Callable[[ChatRequest], bool]
        if isinstance(match, str):
            needle = match

            def contains(r: ChatRequest) -> bool:
                return needle in request_text(r)

            fn, label = contains, repr(match)
        else:
            fn, label = match, getattr(match, "__name__", "predicate")
        for _ in range(times):
            self._expected.append(_Expectation(fn, reply, label))
        return self

    async def complete(self, request: ChatRequest) -> Completion:
        self.calls.append(request)
        for exp in self._expected:
            if not exp.used and exp.match(request):
                exp.used = True
                reply = exp.reply(request) if callable(exp.reply) else exp.reply
                return as_completion(reply, request)
        raise UnexpectedCall(
            f"ScriptedBackend {self.name!r} got an unexpected call #{len(self.calls)}:\n"
            f"{request_text(request)[:800]}"
        )

    def assert_done(self) -> None:
        missing = [e.label for e in self._expected if not e.used]
        if missing:
            raise UnexpectedCall(f"expected calls never made: {missing}")


_WORDS = (
    "apple river stone cloud maple tiger pencil garden silver rocket lemon candle harbor "
    "violet meadow falcon copper island thunder velvet"
).split()


def _word(words: list[str], i: int) -> str:
    """Distinct words across all splits: the shuffled list, then numbered variants."""
    return words[i % len(words)] + (str(i // len(words)) if i >= len(words) else "")


@dataclass
class ToyTask(GeneratedTask, ChatTask):
    """Echo a word in UPPER CASE. Seeded; distinct words and ids across the three splits: the
    words, shuffled by ``Random(seed)``, are dealt out train first, then val, then test."""

    n_train: int = 8
    n_val: int = 6
    n_test: int = 6
    seed: int = 0
    name: str = "toy"
    max_tokens: int = 16
    family: ClassVar[str] = "toy"

    @cached_property
    def _words(self) -> list[str]:
        words = list(_WORDS)
        random.Random(self.seed).shuffle(words)
        return words

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        offset = {"train": 0, "val": self.n_train, "test": self.n_train + self.n_val}[split]
        word = _word(self._words, offset + index)
        return Item(id=f"{split}-{index}", input=word, reference=word.upper())

    def prompt(self, item: Item) -> str:
        return f"Word: {item.input}"

    def score(self, output: str, item: Item) -> Score:
        got = output.strip()
        if got == item.reference:
            return Score(1.0, True, "correct")
        return Score(0.0, False, f"expected {item.reference!r}, got {got!r}")


__all__ = [
    "OPTIMIZER_CALL_KINDS",
    "FunctionBackend",
    "ScriptedBackend",
    "ToyTask",
    "UnexpectedCall",
    "optimizer_call_kind",
    "request_text",
    "rules_reply",
    "system_text",
    "user_text",
]
