"""The environment process: one gymnasium-style environment behind a JSON-lines pipe.

``python -m skillgrad.tasks.env_worker PARENT_PID`` reads one request per line on stdin
(``make``, ``reset``, ``step``, ``close``) and answers one JSON line on its own copy of stdout;
whatever the environment prints goes to stderr. An exception of the environment's own ``step``
is answered with ``"raised": "step"`` (the episode's end, scored); any other is the item's
missing data. It leads its own process group (the JVM of TextWorldExpress is in it), which dies
with the run, even after ``kill -9`` and even inside a C call that holds the GIL (Linux: the
kernel's parent-death SIGKILL, and a guard process that then kills the group). ``SIGUSR1`` runs
the environment's ``close`` and ends the group.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skillgrad.plugins import call_factory, resolve_object

# info keys of common environments, mapped to the protocol's names (docs/environments.md)
ALIASES: dict[str, tuple[str, ...]] = {
    "valid_actions": ("valid_actions", "admissible_commands", "validActions", "valid"),
    "task": ("task", "task_description", "taskDescription", "objective"),
    "gold_actions": ("gold_actions", "gold_action_sequence", "expert_plan", "walkthrough"),
    "success": ("success", "won", "is_success", "tasksuccess"),
}
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
MAX_LIST = 200  # valid actions / gold actions kept per info
MAX_ITEM = 300  # characters per action in those lists


def _bounded(text: Any, limit: int) -> str:
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f" …[{len(text) - limit} characters cut]"


def _text_list(value: Any) -> list[str] | None:
    if isinstance(value, (list, tuple)):
        return [_bounded(v, MAX_ITEM) for v in value[:MAX_LIST]]
    return None


def _number(value: Any) -> float | None:
    """A finite real number as a float: Python's and numpy's (``float32``, ``int64``, ``bool_``)
    alike, or anything with ``__float__``; None for text, NaN, infinities and the rest."""
    if isinstance(value, (str, bytes, bytearray)) or not hasattr(type(value), "__float__"):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def canonical_info(info: Any, max_chars: int) -> dict[str, Any]:
    """The protocol's fields of an environment's ``info`` (aliases read, sizes bounded):
    ``valid_actions``, ``task``, ``gold_actions``, ``success``, ``score`` (normalised to [0, 1]
    with ``max_score`` when the info gives one), ``invalid_action`` (True or the reason the
    environment rejected the step's action); ``valid_actions_total`` when the list was cut
    to ``MAX_LIST`` (ScienceWorld lists up to ~3,000)."""
    if not isinstance(info, Mapping):
        return {}
    out: dict[str, Any] = {}
    for name, keys in ALIASES.items():
        found = next((info[k] for k in keys if k in info and info[k] is not None), None)
        if found is None:
            continue
        if name in ("valid_actions", "gold_actions"):
            listed = _text_list(found)
            if listed is not None:
                out[name] = listed
                if name == "valid_actions" and len(found) > MAX_LIST:
                    # a cut list cannot tell a valid action from an invalid one
                    out["valid_actions_total"] = len(found)
        elif name == "task":
            out[name] = _bounded(found, max_chars)
        elif (flag := _number(found)) is not None:  # success: True, 1, numpy.bool_(True)
            out[name] = flag != 0
    rejected = info.get("invalid_action")
    if isinstance(rejected, bool) or (isinstance(rejected, str) and rejected.strip()):
        out["invalid_action"] = rejected if isinstance(rejected, bool) else _bounded(rejected, 300)
    score = _number(info.get("score_normalized", info.get("score")))
    top = _number(info.get("max_score"))
    if score is not None:
        out["score"] = score / top if top else score
    return out


def build_env(spec: str, options: Mapping[str, Any], base_dir: str | None) -> Any:
    """``module:attr`` / ``file.py:attr`` (a class or factory, called with ``options``), or a
    registered gymnasium id (``gymnasium.make(id, **options)``)."""
    if ":" in spec:
        factory = resolve_object(spec, Path(base_dir) if base_dir else None)
        return call_factory(factory, dict(options), f"environment {spec!r}")
    import gymnasium  # only for registered ids

    return gymnasium.make(spec, **dict(options))


class StepRaised(Exception):
    """The environment's own ``step`` raised on an action (an unknown command, a failed
    ``assert action_space.contains(a)``): the episode's end, reported as ``"raised": "step"``."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(describe(exc))


def describe(exc: BaseException) -> str:
    """``Type: message``, bounded, for any exception (even one whose message cannot be made)."""
    try:
        text = str(exc)
    except Exception:
        text = "(its message could not be shown)"
    return _bounded(f"{type(exc).__name__}: {text}", 2000)


class Server:
    """The request handlers; ``env`` is built by ``make``."""

    def __init__(self) -> None:
        self.env: Any = None
        self.max_chars = 4000

    def make(self, req: dict[str, Any]) -> dict[str, Any]:
        self.max_chars = int(req.get("max_chars", self.max_chars))
        self.env = build_env(str(req["env"]), req.get("options") or {}, req.get("base_dir"))
        return {}

    def reset(self, req: dict[str, Any]) -> dict[str, Any]:
        options = req.get("options")
        kwargs: dict[str, Any] = {"seed": req.get("seed")}
        if options:
            kwargs["options"] = options
        found = self.env.reset(**kwargs)
        obs, info = found if isinstance(found, tuple) and len(found) == 2 else (found, {})
        return {"obs": _bounded(obs, self.max_chars), "info": canonical_info(info, self.max_chars)}

    def step(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            found = self.env.step(str(req["action"]))
        except Exception as exc:  # the action's outcome, told apart from a broken protocol
            raise StepRaised(exc) from exc
        if len(found) == 4:  # the older gym protocol: done, no truncated
            obs, reward, terminated, info = found
            truncated = False
        else:
            obs, reward, terminated, truncated, info = found
        return {
            "obs": _bounded(obs, self.max_chars),
            "reward": _number(reward) or 0.0,
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": canonical_info(info, self.max_chars),
        }

    def close(self) -> None:
        if self.env is not None and callable(getattr(self.env, "close", None)):
            self.env.close()


def _kill_group() -> None:
    """Everything this process started (the JVM) dies with it."""
    try:
        os.killpg(os.getpgrp(), signal.SIGKILL)
    except OSError:
        os._exit(1)


def _watch_parent(parent: int) -> None:
    """Portable parent-death check (where there is no ``prctl``): a step that hangs in Python
    code still ends when the run is gone."""
    while True:
        if os.getppid() != parent:
            _kill_group()
        time.sleep(0.2)


def _death_signal(sig: int) -> bool:
    """Linux: ask the kernel to send ``sig`` to this process when its parent thread ends
    (``PR_SET_PDEATHSIG``); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _start_guard(worker: int) -> None:
    """A small process of the worker's group that kills the group when the worker dies: the
    worker itself is killed by the kernel (SIGKILL) when the run dies, even inside a C call
    that holds the GIL, and no Python of the worker runs then; the guard's does (it only
    waits), so the JVM and whatever else the environment started go too."""
    if os.fork() != 0:
        return
    try:
        quiet = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the run's pipes end with the worker, not with its guard
            os.dup2(quiet, fd)
        signal.signal(signal.SIGTERM, lambda *_: _kill_group())
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if not _death_signal(signal.SIGTERM) or os.getppid() != worker:
            _kill_group()
        while True:
            signal.pause()
    finally:  # never back into the worker's code
        os._exit(0)


def _close_and_exit(server: Server) -> None:
    """Asked to stop (``SIGUSR1``, e.g. after a step timed out): the environment's ``close`` runs
    (it may stop helpers it started in their own session), then the group is killed. The run
    kills the group anyway after a short deadline, should ``close`` hang or never get the GIL."""
    with contextlib.suppress(BaseException):
        server.close()
    _kill_group()


def _die_with_parent(parent: int, server: Server) -> None:
    if _death_signal(signal.SIGKILL):  # needs no Python: holds in a C call with the GIL
        _start_guard(os.getpid())
        if os.getppid() != parent:  # the run died before the signal was set
            _kill_group()
    else:
        signal.signal(signal.SIGTERM, lambda *_: _kill_group())
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run decides when we stop
    signal.signal(signal.SIGUSR1, lambda *_: _close_and_exit(server))


def _answer(server: Server, req: Any) -> dict[str, Any]:
    op = req.get("op") if isinstance(req, dict) else None
    if op not in ("make", "reset", "step"):
        return {"ok": False, "error": f"unknown request {op!r}"}
    try:
        return {"ok": True, **getattr(server, op)(req)}
    except StepRaised as exc:  # the action's outcome: the episode's end, scored
        return {"ok": False, "error": str(exc), "raised": "step"}
    except BaseException as exc:  # reported to the run: one item's infra_error
        return {"ok": False, "error": describe(exc)}


def serve(parent: int) -> None:
    server = Server()
    _die_with_parent(parent, server)
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # an environment's prints must not corrupt the protocol
    for line in sys.stdin:
        req = json.loads(line)
        if isinstance(req, dict) and req.get("op") == "close":
            break
        answer = _answer(server, req)
        # ASCII: any text (lone surrogates too) crosses the pipe; the run reads it back as is
        reply.write(json.dumps(answer, default=str) + "\n")
        reply.flush()
    try:
        server.close()
    finally:
        _kill_group()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
