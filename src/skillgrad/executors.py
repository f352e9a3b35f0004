"""Where the heavy, model-free part of a rollout runs (``hardware.executor``), and Ray's cluster.

A task whose rollouts are heavy (code: judging in the sandbox; agents: the whole agent run)
declares ``bind_executor(executor)`` (read through ``tasks.base.task_abilities``) and hands each
heavy part to ``await executor.run(job)``. A job is a picklable callable holding plain data
only (never a model backend, the call cache or a budget): every call to *our* model backends
stays on the driver, so caching, metering, budget and rate limits are the driver's alone.

- ``LocalExecutor`` (``hardware.executor: local``, the default): the job runs in a thread of
  this process, exactly as before executors existed.
- ``RayExecutor`` (``hardware.executor: ray``): the job runs as one Ray task (``num_cpus``
  declared, no Ray-level retries: the rollout retries an infrastructure failure itself) on a
  cluster; its result comes back to the driver. A job whose worker or node died raises
  ``JobLost`` (an infrastructure failure of that item, not a zero). An exception the job raised
  is re-raised on the driver as itself.

Environment tasks keep a process per episode in flight: under Ray each lives in a Ray actor
(``tasks/env_remote.py``), whose calls are awaited with ``ray_result`` like a job's. Tasks that
are not heavy (chat, tools) ignore the executor. The cluster code (``import_ray``, ``connect``)
is shared with the sweep's Ray executor (``sweep/pool.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from skillgrad.errors import ConfigError, SkillgradError

T = TypeVar("T")
Job = Callable[[], T]

INSTALL = "pip install 'skillgrad[ray]'"
# Read by Ray at import time: loopback node address for a local cluster, no usage reporting.
_LOCAL_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
log = logging.getLogger(__name__)


class JobLost(SkillgradError):
    """The executor lost a job (its worker process or node died): an infrastructure failure."""


class RolloutExecutor(Protocol):
    """Runs one heavy, model-free job of a rollout and returns its result (or re-raises what the
    job raised). ``close()`` releases what the executor started (a local Ray cluster)."""

    name: str

    async def run(self, job: Job[T]) -> T: ...

    def close(self) -> None: ...


class LocalExecutor:
    """``hardware.executor: local``: the job runs in a thread of this process."""

    name = "local"

    async def run(self, job: Job[T]) -> T:
        return await asyncio.to_thread(job)

    def close(self) -> None:
        """Nothing to release."""


LOCAL = LocalExecutor()


def call_job(job: Job[T]) -> T:
    """The Ray task body (module level, so workers import it by name)."""
    return job()


class RayExecutor:
    """``hardware.executor: ray``: each job is one Ray task with ``num_cpus`` CPUs.

    ``start()`` attaches to ``address``, or starts a private cluster on 127.0.0.1 with this
    machine's CPUs; when Ray is already initialised in this process (a sweep's Ray worker, a
    test's cluster) that connection is used and left open by ``close()``."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: float = 1.0) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.jobs = 0  # submitted so far (logged at close)
        self._ray: Any = None
        self._remote: Any = None
        self._started_here = False

    def start(self) -> RayExecutor:
        ray = import_ray("hardware.executor: ray")
        if ray.is_initialized():
            where = "the Ray connection of this process"
        else:
            connect(ray, self.address, os.cpu_count() or 1)
            self._started_here = True
            where = self.address or "a local Ray cluster (127.0.0.1)"
        log.info("hardware.executor ray: heavy rollout jobs run on %s", where)
        self._ray = ray
        self._remote = ray.remote(num_cpus=self.num_cpus, max_retries=0)(call_job)
        return self

    async def run(self, job: Job[T]) -> T:
        if self._remote is None:
            self.start()
        self.jobs += 1
        result: T = await ray_result(self._ray, self._remote.remote(job))
        return result

    def close(self) -> None:
        if self._ray is None:
            return
        log.debug("ray executor: %d jobs ran on the cluster", self.jobs)
        if self._started_here:
            self._ray.shutdown()
        self._ray = self._remote = None
        self._started_here = False


async def ray_result(ray: Any, ref: Any) -> Any:
    """The result of a Ray task or actor call ``ref``, awaited: what it raised is re-raised as
    itself; a lost worker, actor or node is ``JobLost``; cancelling the await cancels the task
    (an actor's running call cannot be: its owner kills the actor)."""
    try:
        return await asyncio.wrap_future(ref.future())
    except ray.exceptions.RayTaskError as exc:  # the job raised: re-raise it as itself
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from exc  # chained: the worker's traceback, for debugging
        raise JobLost(f"a Ray task failed: {_first_line(exc)}") from None
    except ray.exceptions.RayError as exc:  # the worker or node died, the object was lost
        raise JobLost(f"Ray lost the job ({type(exc).__name__}): {_first_line(exc)}") from None
    except asyncio.CancelledError:
        with contextlib.suppress(ValueError, TypeError):  # force is for tasks, not actor calls
            ray.cancel(ref, force=True)
        raise


def open_executor(kind: str, address: str | None = None, num_cpus: float = 1.0) -> RolloutExecutor:
    """The executor named by ``hardware.executor``, started (a missing Ray is a ConfigError
    with the install command, raised here, before any model call)."""
    if kind == "local":
        return LOCAL
    if kind == "ray":
        return RayExecutor(address, num_cpus).start()
    raise ConfigError(f"hardware.executor: unknown executor {kind!r}; use local or ray")


class LoopSlots:
    """At most ``n`` holders at once per event loop: ``async with slots(): ...``. An asyncio
    semaphore is bound to one loop; a task may be used by several ``asyncio.run`` calls."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._by_loop = weakref.WeakKeyDictionary()

    def __call__(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        slots = self._by_loop.get(loop)
        if slots is None:
            slots = self._by_loop[loop] = asyncio.Semaphore(self.n)
        return slots


def import_ray(purpose: str = "--executor ray") -> Any:
    """The ``ray`` module, or a ConfigError naming ``purpose`` and the install command."""
    for key, value in _LOCAL_ENV.items():
        os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError:
        raise ConfigError(
            f"{purpose} needs Ray, which is not installed here: {INSTALL} (or use the local "
            "executor)"
        ) from None
    return ray


def connect(ray: Any, address: str | None, workers: int) -> None:
    """Attach to ``address``, or start a local cluster on 127.0.0.1 with ``workers`` CPUs
    (no dashboard, no usage stats)."""
    try:
        if address:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
            return
        ray.init(
            address="local",
            num_cpus=workers,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            configure_logging=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a local cluster"
        raise SkillgradError(f"could not start or reach Ray ({where}): {exc}") from None
    gcs = str(ray.get_runtime_context().gcs_address)
    if not address and not gcs.startswith("127.0.0.1:"):
        ray.shutdown()
        raise SkillgradError(
            f"the local Ray cluster bound {gcs}, not loopback: Ray was imported before skillgrad "
            "could set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0; set it in the environment and re-run"
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = [
    "INSTALL",
    "LOCAL",
    "Job",
    "JobLost",
    "LocalExecutor",
    "LoopSlots",
    "RayExecutor",
    "RolloutExecutor",
    "call_job",
    "connect",
    "import_ray",
    "open_executor",
    "ray_result",
]
