"""Environment processes on a Ray cluster (``hardware.executor: ray``): each one lives in a Ray
actor (``EnvHost``) on the node Ray chose, beside the worker that steps it; the episode loop and
every model call stay on the driver, and each reset or step is one small call to the actor.

One actor holds one ``EnvProcess`` for its whole life, so an actor is exactly the process the
pool reuses across healthy episodes (one per episode in flight) and is killed when the pool
stops or closes that process. The process is started by the actor with the kernel's
parent-death signal (``env_worker``), so when the actor's worker dies (``ray.kill``, the driver
killed and Ray reaping its actors) the process, its guard and a JVM go with it. A call that
raised on the node is re-raised here as itself (``EnvFailure``, ``EnvStepFailure``); an actor
that died is an ``EnvFailure``: the item's missing data, like a crashed process here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
from typing import Any

from skillgrad.executors import JobLost, RayExecutor, RolloutExecutor, import_ray, ray_result
from skillgrad.tasks.env_child import looks_secret
from skillgrad.tasks.env_pool import (
    CLOSE_GRACE,
    EnvChannel,
    EnvFailure,
    EnvOpener,
    EnvProcess,
    EnvSpec,
)

HOST_CPUS = 0.01
"""CPUs one ``EnvHost`` declares. Hosts live as long as the run: declaring whole CPUs would let
``rollout_workers`` episodes wait forever for hosts a smaller cluster cannot place."""
CALL_MARGIN = 60.0  # seconds past the process's own deadlines before a silent actor is lost
ASK_TIMEOUT = 10.0  # seconds an idle actor gets to answer whether its process lives


class EnvHost:
    """The Ray actor: one environment process on the actor's node (``EnvProcess``'s methods)."""

    def __init__(self, spec: EnvSpec) -> None:
        self.process = EnvProcess(spec)

    def where(self) -> tuple[int, int]:
        """(this actor's pid, its environment process's pid)."""
        return os.getpid(), self.process.proc.pid

    def start(self) -> None:
        self.process.start()

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        return self.process.request(message, timeout)

    def alive(self) -> bool:
        return self.process.alive

    def stop(self) -> None:
        self.process.stop()

    def close(self) -> None:
        self.process.close()


class RemoteEnvProcess:
    """The driver's ``EnvChannel`` to one ``EnvHost`` actor, started at once (Ray places it)."""

    def __init__(self, spec: EnvSpec, ray: Any) -> None:
        self.ray, self.spec = ray, spec
        self.actor = _host_class(ray).remote(spec)
        self.made = False
        self.lost = False  # the actor died or was killed: every later call fails

    @property
    def alive(self) -> bool:
        """The actor and its process both live (asked of the actor, as the pool asks a local
        process before reusing it)."""
        if self.lost:
            return False
        try:
            return bool(self.ray.get(self.actor.alive.remote(), timeout=ASK_TIMEOUT))
        except Exception:  # the actor is gone or does not answer: a fresh one replaces it
            return False

    async def call(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        if self.lost:
            raise EnvFailure("the environment process is gone (its Ray actor was stopped)")
        limit = timeout + CLOSE_GRACE + CALL_MARGIN + (0 if self.made else self.spec.make_timeout)
        self.made = True
        ref = self.actor.request.remote(message, timeout)
        try:
            answer: dict[str, Any] = await asyncio.wait_for(ray_result(self.ray, ref), limit)
        except (JobLost, TimeoutError) as exc:
            self.kill()
            why = str(exc) or f"no answer within {limit:g} s"
            raise EnvFailure(f"the environment's Ray actor was lost: {why}") from None
        except asyncio.CancelledError:  # Ctrl-C: the call would hold the actor until it ends
            self.kill()
            raise
        return answer

    def start(self) -> None:
        """Build the environment on its node now; ``EnvFailure`` when it cannot be built (what
        the node raised) or the actor was lost."""
        if self.lost:
            raise EnvFailure("the environment process is gone (its Ray actor was stopped)")
        self.made = True
        try:
            self.ray.get(self.actor.start.remote(), timeout=self.spec.make_timeout + CALL_MARGIN)
        except Exception as exc:  # raised on the node, or the actor died or did not answer
            self.kill()
            cause = getattr(exc, "cause", None)
            if isinstance(cause, EnvFailure):
                raise EnvFailure(str(cause)) from None
            raise EnvFailure(f"the environment's Ray actor was lost: {exc}") from None

    def where(self) -> tuple[int, int]:
        """(the actor's pid, its environment process's pid) on the actor's node."""
        pids: tuple[int, int] = self.ray.get(self.actor.where.remote(), timeout=CALL_MARGIN)
        return pids

    def stop(self) -> None:
        """The process's ``stop`` on its node (its environment's ``close`` runs), then the actor
        is killed (an actor whose episode was cancelled mid-call is killed at once: it takes one
        call at a time and could not stop the process before that call ends)."""
        self._ask("stop", CLOSE_GRACE + 2)

    def close(self) -> None:
        self._ask("close", ASK_TIMEOUT)

    def _ask(self, method: str, timeout: float) -> None:
        if not self.lost and self.ray.is_initialized():
            with contextlib.suppress(Exception):  # a dead actor or cluster: nothing to ask
                self.ray.get(getattr(self.actor, method).remote(), timeout=timeout)
        self.kill()

    def kill(self) -> None:
        if self.lost:
            return
        self.lost = True
        if self.ray.is_initialized():
            with contextlib.suppress(Exception):
                self.ray.kill(self.actor, no_restart=True)


@functools.cache
def _host_class(ray: Any) -> Any:
    """``EnvHost`` as a Ray actor class (made once: Ray exports a class per definition), spread
    over the cluster's nodes, never restarted (the pool replaces a lost process)."""
    host = ray.remote(num_cpus=HOST_CPUS, max_restarts=0, max_task_retries=0)(EnvHost)
    return host.options(scheduling_strategy="SPREAD")


def env_opener(executor: RolloutExecutor) -> EnvOpener:
    """How the task's pool starts an environment process under ``executor``: a local process,
    or (``RayExecutor``) one in a Ray actor, given none of the variables this run holds as
    secrets (a remembered key's variable whatever its name: the node cannot know them)."""
    if not isinstance(executor, RayExecutor):
        return EnvProcess
    ray = import_ray("hardware.executor: ray")

    def remote(spec: EnvSpec) -> EnvChannel:
        secret = tuple(k for k, v in os.environ.items() if looks_secret(k, v))
        withhold = tuple(k for k in secret if k not in spec.pass_env)
        return RemoteEnvProcess(dataclasses.replace(spec, withhold=withhold), ray)

    return remote


__all__ = ["ASK_TIMEOUT", "CALL_MARGIN", "HOST_CPUS", "EnvHost", "RemoteEnvProcess", "env_opener"]
