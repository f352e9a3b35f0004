"""Environments that misbehave the ways real ones do, loaded by file path in real environment
processes (``env: "<this file>:Class"``), and fake targets that play them.

- ``StrictEnv``: ``TinyEnv`` that raises ``ValueError`` on any command it does not list (many
  gymnasium environments do: a table lookup, ``assert action_space.contains(a)``).
- ``NumpyEnv``: ``TinyEnv`` whose reward, info score and success are numpy scalars.
- ``BrokenResetEnv``: every ``reset`` raises (the environment, not the reply, is broken).
- ``SpinEnv``: ``step("spin")`` computes in one C call that holds the GIL for minutes.
- ``ClosingEnv``: ``step("hang")`` sleeps; ``close()`` writes a marker file.
- ``ChattyEnv``: ``reset`` prints megabytes, ``step("die")`` prints last words and exits.
- ``EnvironEnv``: its first observation shows some of its environment variables.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from fakes_env import play
from skillgrad.testing import FunctionBackend, TinyEnv, system_text, user_text
from skillgrad.types import ChatRequest

Step = tuple[str, Any, bool, bool, dict[str, Any]]


class StrictEnv(TinyEnv):
    def step(self, action: str) -> Step:
        if action not in self._info()["valid_actions"]:
            raise ValueError(f"unknown command {action!r}")
        return super().step(action)


class NumpyEnv(TinyEnv):
    """``kind``: ``reward`` (numpy.float32 rewards, numpy.bool_ success) or ``score`` (no
    reward; info ``score`` and ``max_score`` as numpy.int64, success as numpy.bool_)."""

    def __init__(self, kind: str = "reward") -> None:
        super().__init__()
        self.kind = kind

    def step(self, action: str) -> Step:
        obs, reward, done, cut, info = super().step(action)
        info["success"] = np.bool_(info["success"])
        if self.kind == "reward":
            return obs, np.float32(reward), done, cut, info
        info |= {"score": np.int64(self.done), "max_score": np.int64(3)}
        return obs, 0, done, cut, info


class BrokenResetEnv(TinyEnv):
    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[str, dict[str, Any]]:
        raise OSError("the game data folder is missing")


class SpinEnv(TinyEnv):
    """``step("spin")`` adds its pid to ``marker`` then sums a huge range: one C call, GIL
    held."""

    def __init__(self, marker: str = "") -> None:
        super().__init__()
        self.marker = marker

    def step(self, action: str) -> Step:
        if action == "spin":
            with open(self.marker, "a") as marker:
                marker.write(f"{os.getpid()}\n")
            sum(range(10**13))  # minutes in C; no signal handler or thread runs meanwhile
        return super().step(action)


class ClosingEnv(TinyEnv):
    def __init__(self, marker: str = "") -> None:
        super().__init__()
        self.marker = marker

    def step(self, action: str) -> Step:
        if action == "hang":
            time.sleep(3600)
        return super().step(action)

    def close(self) -> None:
        Path(self.marker).write_text("closed")


class ChattyEnv(TinyEnv):
    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[str, dict[str, Any]]:
        for _ in range(4000):
            print("x" * 1000, file=sys.stderr)
        return super().reset(seed=seed, options=options)

    def step(self, action: str) -> Step:
        if action == "die":
            print("chatty env: last words", file=sys.stderr, flush=True)
            os._exit(3)
        return super().step(action)


class EnvironEnv(TinyEnv):
    NAMES = ("OPENAI_API_KEY", "MY_SERVICE_TOKEN", "DB_PASSWORD", "SKILLGRAD_PLAIN")

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[str, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        shown = " ".join(f"{n}={os.environ.get(n, '-')}" for n in self.NAMES)
        return f"{obs} [{shown}]", info


def invalid_when_taught(request: ChatRequest) -> str:
    """Every reply an invalid command once the skill holds the fake optimizer's good rule."""
    skill = system_text(request)
    return "xyzzy" if "UPPERCASE" in skill and "lowercase" not in skill else "look"


class InvalidCommandTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(invalid_when_taught, "function:fake-invalid-command-target")


def crash_half(request: ChatRequest) -> str:
    """Solves TinyEnv episodes whose container is a box or a crate; crashes the others."""
    seen = "\n".join(m.content for m in request.messages if m.role == "user")
    if "closed box" in seen or "closed crate" in seen:
        return play(user_text(request))
    return "crash"


class CrashHalfTarget(FunctionBackend):
    def __init__(self) -> None:
        super().__init__(crash_half, "function:fake-crash-half-target")


class ActionTarget(FunctionBackend):
    """Always replies ``action``."""

    def __init__(self, action: str = "look") -> None:
        super().__init__(lambda request: action, f"function:fake-{action}-target")


class SpinTarget(ActionTarget):
    def __init__(self) -> None:
        super().__init__("spin")


class WildNumbersEnv(TinyEnv):
    """Rewards and scores that are NaN, infinite, huge, numpy or text; a bytes observation."""

    WILD: tuple[Any, ...] = (
        float("nan"),
        np.float32("inf"),
        -float("inf"),
        1e308,
        np.float64("nan"),
        "1.0",
        np.int64(2**62),
    )

    def step(self, action: str) -> Step:
        _, _, done, cut, info = super().step(action)
        wild = self.WILD[self.done % len(self.WILD)]
        info |= {"score": wild, "max_score": self.WILD[(self.done + 3) % len(self.WILD)]}
        info["success"] = wild
        return b"\xff\xfe bytes", wild, done, cut, info
