"""Machine-wide CPU slots: in-process models never run more threads than the machine has cores.

llama.cpp's threads wait for each other at every layer; when they outnumber the cores they lose
their turns and generation collapses (measured on 2 cores: 2 threads per model fell from ~17 to
0.3-0.4 tokens/s with another model computing). So every compute holds one slot per thread it
runs. A slot is an exclusive ``flock`` on one of ``cores`` files in a per-user runtime folder:
the same rule binds threads of one process (optimizer and target, rollout workers) and
processes of one machine (a sweep's local pool), with no daemon, and a killed process frees its
slots. By default a compute takes every core (one model computes at a time, at full speed);
``n_threads`` below the core count lets that many computes share the machine. Numbers:
bench/README.md, "CPU sharing of the embedded models".
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path


def available_cores() -> int:
    """The cores this process may run on (its affinity mask: taskset, cgroups, containers)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def slots_dir() -> Path:
    """``$XDG_RUNTIME_DIR/skillgrad/cpu``, else ``<tmp>/skillgrad-<uid>/cpu``: per user, local."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime, "skillgrad", "cpu")
    return Path(tempfile.gettempdir(), f"skillgrad-{os.getuid()}", "cpu")


class CpuSlots:
    """``cores`` slots shared by every process of this user on this machine."""

    def __init__(self, cores: int | None = None, directory: Path | None = None) -> None:
        self.cores = cores or available_cores()
        self.directory = directory or slots_dir()
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _open(self, slot: int) -> int:
        return os.open(self.directory / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)

    @contextlib.contextmanager
    def hold(self, threads: int) -> Iterator[int]:
        """Hold ``min(threads, cores)`` slots for the body (waiting for them); yields how many."""
        fds = self._acquire(min(max(1, threads), self.cores))
        try:
            yield len(fds)
        finally:
            for fd in fds:
                os.close(fd)  # closing the descriptor releases its lock

    def _acquire(self, n: int) -> list[int]:
        # first any n free slots, without waiting; each acquisition opens its own descriptors,
        # so two threads of one process exclude each other exactly as two processes do
        start = random.randrange(self.cores)
        held: list[int] = []
        for slot in [(start + i) % self.cores for i in range(self.cores)]:
            fd = self._open(slot)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            held.append(fd)
            if len(held) == n:
                return held
        for fd in held:
            os.close(fd)
        # not enough free: wait for n of them, taken in ascending order. Every waiter takes
        # slots in that order and nobody waits while holding slots out of order, so no cycle
        # of waiters can form (no deadlock).
        wanted = sorted((start + i) % self.cores for i in range(n))
        held = []
        try:
            for slot in wanted:
                fd = self._open(slot)
                held.append(fd)
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            for fd in held:
                os.close(fd)
            raise
        return held


__all__ = ["CpuSlots", "available_cores", "slots_dir"]
