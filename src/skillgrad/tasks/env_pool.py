"""Environment processes for rollouts: one per episode in flight, reused across episodes.

Each ``EnvProcess`` is a ``skillgrad.tasks.env_worker`` child in its own process group
(Ctrl-C at the terminal reaches the run, not the environments; the run closes them), given the
run's environment variables without its secrets (``env_child``). A child that died, answered
garbage, or raised or hung outside ``step`` is an ``EnvFailure``; a ``step`` that raised or did
not answer in time is an ``EnvStepFailure`` (the episode's end, not missing data). Either way a
broken process is stopped (its ``close`` gets ``CLOSE_GRACE`` seconds, then the group is killed)
and the pool starts a fresh one. ``EnvPool.close`` (the task's ``close``, called when the
session closes, and at interpreter exit) closes them all. An episode talks to any ``EnvChannel``:
an ``EnvProcess`` here, or one on a Ray cluster (``env_remote``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from skillgrad.errors import SkillgradError
from skillgrad.skill.text import valid_data
from skillgrad.tasks.env_child import OutputTail, child_environment

MAX_REPLY = 8 * 1024 * 1024  # one answer line of the environment process
CLOSE_GRACE = 3.0  # seconds a broken environment's close() gets before its group is killed


class EnvFailure(SkillgradError):
    """The environment process crashed, could not be built, or raised or hung in ``reset``:
    one item's infra error (missing data), never a zero for the skill."""


class EnvStepFailure(SkillgradError):
    """The environment's ``step`` raised on an action or did not answer it within the step
    timeout: what the reply caused, so the episode ends there and is scored as it stands. The
    message completes "the environment …" ("raised ValueError: …", "did not answer …")."""


@dataclass(frozen=True)
class EnvSpec:
    """What the environment process builds: ``env`` (``module:attr``, ``file.py:attr`` or a
    gymnasium id) called with ``options``; ``base_dir`` resolves a relative file; ``withhold``:
    variables the process is not given beyond ``child_environment``'s rule (the names the run
    holds as secrets, for a process started on another machine, which cannot know them)."""

    env: str
    options: dict[str, Any] = field(default_factory=dict)
    base_dir: str | None = None
    max_chars: int = 4000
    make_timeout: float = 120.0
    pass_env: tuple[str, ...] = ()
    withhold: tuple[str, ...] = ()


class EnvChannel(Protocol):
    """What an episode plays through: one environment process, here or on a cluster."""

    @property
    def alive(self) -> bool: ...

    async def call(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request and its answer (``EnvProcess.request``'s contract), awaited."""
        ...

    def start(self) -> None:
        """Build the environment now (``EnvProcess.start``'s contract)."""
        ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


EnvOpener = Callable[[EnvSpec], EnvChannel]
"""How a pool starts an environment process (``EnvProcess``, or one on a cluster)."""


class EnvProcess:
    """One environment process; ``request`` blocks (``call`` runs it in a thread)."""

    def __init__(self, spec: EnvSpec) -> None:
        self.spec = spec
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "skillgrad.tasks.env_worker", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=_without(child_environment(spec.pass_env), spec.withhold),
        )
        assert self.proc.stderr is not None
        self.log = OutputTail(os.dup(self.proc.stderr.fileno()))
        self.proc.stderr.close()
        self.buffer = b""
        self.made = False
        self.killed = False

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and read its answer; ``EnvFailure`` (process killed) otherwise."""
        try:
            return self._request(message, timeout)
        except (OSError, ValueError) as exc:  # a pipe closed under us (the run is closing)
            raise self._failed(f"the environment process is gone ({exc})") from None

    def start(self) -> None:
        """Build the environment now (otherwise the first request does); ``EnvFailure`` when it
        cannot be built."""
        try:
            self._start()
        except (OSError, ValueError) as exc:
            raise self._failed(f"the environment process is gone ({exc})") from None

    def _start(self) -> None:
        if not self.made:
            self.made = True
            make: dict[str, Any] = {"op": "make", "env": self.spec.env}
            make |= {"options": self.spec.options, "base_dir": self.spec.base_dir}
            make["max_chars"] = self.spec.max_chars
            self._exchange(make, self.spec.make_timeout, "starting the environment")

    def _request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._start()
        return self._exchange(message, timeout, str(message.get("op")))

    def _exchange(self, message: dict[str, Any], timeout: float, what: str) -> dict[str, Any]:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            raise self._failed(f"the environment process died before {what}") from None
        line = self._read_line(timeout, what)
        try:
            answer = valid_data(json.loads(line))  # outside text: lone surrogates made U+FFFD
        except json.JSONDecodeError:
            self.kill()
            raise EnvFailure(f"the environment process answered {what} with non-JSON") from None
        if not isinstance(answer, dict) or not answer.get("ok"):
            error = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(answer, dict) and answer.get("raised") == "step" and what == "step":
                raise EnvStepFailure(f"raised {error}")
            raise EnvFailure(f"the environment raised during {what}: {error}")
        return answer

    def _read_line(self, timeout: float, what: str) -> bytes:
        stdout: BinaryIO = self.proc.stdout  # type: ignore[assignment]
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready = select.select([stdout], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self.stop()
                if what == "step":
                    raise EnvStepFailure(f"did not answer within {timeout:g} s")
                raise EnvFailure(f"the environment did not answer {what} within {timeout:g} s")
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                raise self._failed(f"the environment process died during {what}")
            self.buffer += chunk
            if len(self.buffer) > MAX_REPLY:
                self.kill()
                raise EnvFailure(f"the environment's answer to {what} exceeds {MAX_REPLY} bytes")
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _failed(self, message: str) -> EnvFailure:
        """The failure with the process's last words; the process group killed."""
        tail = self._tail()
        self.kill()
        return EnvFailure(message + tail)

    def _tail(self) -> str:
        try:
            code = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            code = None
        text = self.log.text(600, wait=1.0 if code is not None else 0.0)
        return (f" (exit code {code})" if code is not None else "") + (
            f"; its last output: {text}" if text else ""
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    async def call(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        return await asyncio.to_thread(self.request, message, timeout)

    def stop(self, grace: float = CLOSE_GRACE) -> None:
        """Stop a process that may be stuck in a step: ``SIGUSR1`` makes it run the
        environment's ``close`` and kill its group; after ``grace`` seconds the run kills the
        group itself (a ``close`` that hangs, or a C call that never lets Python run)."""
        if not self.killed and self.alive:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGUSR1)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        self.kill()

    def close(self) -> None:
        """Ask the process to close its environment; kill its group if it does not."""
        if self.alive:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"op": "close"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        """Kill the process group (the environment and whatever it started)."""
        if self.killed:
            return
        self.killed = True
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.log.stop()


def _without(env: dict[str, str], names: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in names}


def _close_all(processes: set[EnvChannel]) -> None:
    for process in list(processes):
        process.close()
    processes.clear()


class EnvPool:
    """Idle environment processes to reuse; a new one (``opener(spec)``: an ``EnvProcess``
    here by default) when all are busy. Thread-safe."""

    def __init__(self, spec: EnvSpec, opener: EnvOpener = EnvProcess) -> None:
        self.spec, self.opener = spec, opener
        self.idle: list[EnvChannel] = []
        self.processes: set[EnvChannel] = set()
        self.lock = threading.Lock()
        # at interpreter exit too, should the run never close its task
        self._finalizer = weakref.finalize(self, _close_all, self.processes)

    def acquire(self) -> EnvChannel:
        with self.lock:
            while self.idle:
                process = self.idle.pop()
                if process.alive:
                    return process
                self.processes.discard(process)
            process = self.opener(self.spec)
            self.processes.add(process)
            return process

    def release(self, process: EnvChannel, healthy: bool) -> None:
        """Back to the pool after a clean episode; stopped otherwise (a fresh one replaces it)."""
        if healthy and process.alive:
            with self.lock:
                self.idle.append(process)
            return
        process.stop()
        with self.lock:
            self.processes.discard(process)

    def close(self) -> None:
        with self.lock:
            self.idle.clear()
        _close_all(self.processes)


__all__ = [
    "CLOSE_GRACE",
    "EnvChannel",
    "EnvFailure",
    "EnvOpener",
    "EnvPool",
    "EnvProcess",
    "EnvSpec",
    "EnvStepFailure",
]
