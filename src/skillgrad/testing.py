"""Test doubles that ship with skillgrad, for your tests and ours.

- ``ScriptedBackend``: strict; answers only the calls it was told to expect, fails on an
  unexpected call, and ``assert_done()`` fails on an expected call that never came.
- ``FunctionBackend``: answers every call with a Python function of the request (it lives in
  ``skillgrad.models.function``; re-exported here).
- ``ToyTask``: a tiny seeded task (echo a word in upper case) with an exact-match scorer.
- ``TinyEnv``: a tiny deterministic text environment with gymnasium's protocol (open the
  container, take the key, unlock the door), with traps that crash, kill or hang it on demand.
- ``optimizer_call_kind`` and ``rules_reply``: what a fake optimizer needs to answer each call
  the way the training loop expects, without matching on the prompts' wording.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, get_args

from skillgrad.benchmarks.generated import GeneratedTask
from skillgrad.models.function import FunctionBackend, as_completion
from skillgrad.prompts import prompt_head
from skillgrad.tasks.base import Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.train.optimizer_call import CallKind
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


OPTIMIZER_CALL_KINDS: tuple[str, ...] = get_args(CallKind)
"""Every optimizer call kind (``train/optimizer_call.CallKind``), in its order."""


def optimizer_call_kind(request: ChatRequest) -> str | None:
    """Which optimizer call ``request`` is (one of ``OPTIMIZER_CALL_KINDS``), told by its system
    prompt; None for any other request (a target rollout, a judge call)."""
    system = system_text(request)
    for kind in OPTIMIZER_CALL_KINDS:
        if system.startswith(prompt_head(f"{kind}_system")):
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


_CONTAINERS = ("box", "chest", "drawer", "crate")
_KEYS = ("key", "card", "token")


class TinyEnv:
    """A seeded three-step puzzle with gymnasium's protocol: ``reset(seed=...)`` ->
    ``(obs, info)``, ``step(action)`` -> ``(obs, reward, terminated, truncated, info)``.

    Solve: ``open <container>``, ``take <key>``, ``unlock door`` (the names depend on the
    seed); each right step in order pays 1/3. ``info`` carries ``valid_actions``, ``task``
    and, at reset, ``gold_actions``; no ``score`` (the task normalises the rewards). With
    ``traps=True`` the actions ``crash`` (raises), ``die`` (the process exits) and ``hang``
    (sleeps for an hour) break the environment, for tests of infrastructure failures.
    """

    def __init__(self, traps: bool = False, noisy: bool = False) -> None:
        self.traps, self.noisy = traps, noisy
        self.gold: list[str] = []
        self.done = 0

    def _info(self) -> dict[str, Any]:
        rest = self.gold[self.done :]
        valid = sorted({"look", *rest[:1]})
        return {"valid_actions": valid, "task": "Unlock the door."}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        rng = random.Random(seed)
        self.container, self.key = rng.choice(_CONTAINERS), rng.choice(_KEYS)
        self.gold = [f"open {self.container}", f"take {self.key}", "unlock door"]
        self.done = 0
        if self.noisy:  # an environment that prints must not break the protocol
            print("tiny env: reset", seed)
        obs = f"You are in a room with a closed {self.container} and a locked door."
        return obs, {**self._info(), "gold_actions": list(self.gold)}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.traps and action in ("crash", "die", "hang"):
            if action == "crash":
                raise RuntimeError("tiny env crashed on purpose")
            if action == "die":
                os._exit(3)
            time.sleep(3600)
        reward, obs = 0.0, "Nothing happens."
        if self.done < len(self.gold) and action.strip().lower() == self.gold[self.done]:
            self.done += 1
            reward = 1 / 3
            obs = ("The {0} is open: a {1} inside.", "You take the {1}.", "The door opens.")[
                self.done - 1
            ].format(self.container, self.key)
        elif action.strip().lower() == "look":
            obs = f"A {self.container} and a door. You have done {self.done} of 3 things."
        elif action.strip().lower() not in self._info()["valid_actions"]:
            obs = "I do not understand that."
        finished = self.done == len(self.gold)
        return obs, reward, finished, False, {**self._info(), "success": finished}

    def close(self) -> None:
        """Nothing to release."""


__all__ = [
    "OPTIMIZER_CALL_KINDS",
    "FunctionBackend",
    "ScriptedBackend",
    "TinyEnv",
    "ToyTask",
    "UnexpectedCall",
    "optimizer_call_kind",
    "request_text",
    "rules_reply",
    "system_text",
    "user_text",
]
