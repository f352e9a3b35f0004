"""The environment process: one gymnasium-style environment behind a JSON-lines pipe.

``python -m skillgrad.tasks.env_worker PARENT_PID`` reads one request per line on stdin
(``make``, ``reset``, ``step``, ``close``) and answers one JSON line on its own copy of stdout;
whatever the environment prints goes to stderr. It leads its own process group (the JVM of
TextWorldExpress is in it) and kills that whole group as soon as its parent is gone, so no
environment outlives the run, even after ``kill -9``.
"""

from __future__ import annotations

import json
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
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


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
        elif isinstance(found, (bool, int)):
            out[name] = bool(found)
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
        found = self.env.step(str(req["action"]))
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
    """Portable parent-death check: a step that hangs still ends when the run is gone."""
    while True:
        if os.getppid() != parent:
            _kill_group()
        time.sleep(0.2)


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    signal.signal(signal.SIGTERM, lambda *_: _kill_group())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run decides when we stop
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def serve(parent: int) -> None:
    _die_with_parent(parent)
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # an environment's prints must not corrupt the protocol
    server = Server()
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        if op == "close":
            break
        try:
            answer: dict[str, Any] = {"ok": True, **getattr(server, str(op))(req)}
        except BaseException as exc:  # reported to the run: one item's infra_error
            answer = {"ok": False, "error": _bounded(f"{type(exc).__name__}: {exc}", 2000)}
        # ASCII: any text (lone surrogates too) crosses the pipe; the run reads it back as is
        reply.write(json.dumps(answer, default=str) + "\n")
        reply.flush()
    try:
        server.close()
    finally:
        _kill_group()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
