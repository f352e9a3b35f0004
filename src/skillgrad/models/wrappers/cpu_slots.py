"""Machine-wide CPU slots: in-process models never run more threads than the machine has cores.

llama.cpp's threads wait for each other at every layer; when they outnumber the cores they lose
their turns and generation collapses (two processes on 2 cores: 0.5 tokens/s each, not 13). Every
compute holds one slot per thread it runs. A slot is an exclusive ``flock`` on one of ``cores``
files in a per-user runtime folder: the same rule binds the threads of one process (optimizer
and target, rollout workers) and the processes of one machine (a sweep's local pool), with no
daemon, and a killed process frees its slots.

``hold(n, exact=True)`` waits for exactly ``n`` slots (an explicit ``n_threads``). The default,
``exact=False``, takes the free slots, at most one per core not busy with other programs
(``/proc/loadavg``'s runnable count: programs outside skillgrad hold no slots) and at least one
(waiting for it): alone on an idle machine a model runs on every core; next to other work it
runs on what is left instead of collapsing. Numbers: bench/README.md, "CPU sharing".
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import tempfile
import time
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


def busy_elsewhere(samples: int = 3) -> int:
    """Threads runnable right now besides the caller, per ``/proc/loadavg`` (the least of a few
    samples 1 ms apart, so a program that merely woke up is not counted); 0 if unknown."""
    counts = []
    for i in range(samples):
        try:
            with open("/proc/loadavg", encoding="ascii") as fh:
                running = int(fh.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 0
        counts.append(running - 1)  # the reading thread itself is running
        if i + 1 < samples:
            time.sleep(0.001)
    return max(0, min(counts))


class CpuSlots:
    """``cores`` slots shared by every process of this user on this machine."""

    def __init__(self, cores: int | None = None, directory: Path | None = None) -> None:
        self.cores = cores or available_cores()
        self.directory = directory or slots_dir()
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _open(self, slot: int) -> int:
        return os.open(self.directory / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)

    @contextlib.contextmanager
    def hold(self, threads: int, exact: bool = False) -> Iterator[int]:
        """Hold slots for the body; yields how many (run that many threads).

        ``exact``: wait for ``min(threads, cores)`` slots. Otherwise take the free ones, at most
        ``threads`` and at most the cores not busy elsewhere, at least one (waiting for it)."""
        want = min(max(1, threads), self.cores)
        fds = self._acquire_exact(want) if exact else self._acquire_free(want)
        try:
            yield len(fds)
        finally:
            for fd in fds:
                os.close(fd)  # closing the descriptor releases its lock

    def _try(self, slot: int) -> int | None:
        """The slot's locked descriptor, or None when someone holds it. Each acquisition opens
        its own descriptors: two threads of one process exclude each other as processes do."""
        fd = self._open(slot)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def _grab(self, n: int, start: int, held: list[int]) -> list[int]:
        """Add free slots to ``held`` without waiting, until it has ``n``."""
        for slot in [(start + i) % self.cores for i in range(self.cores)]:
            if len(held) >= n:
                break
            fd = self._try(slot)
            if fd is not None:
                held.append(fd)
        return held

    def _acquire_free(self, want: int) -> list[int]:
        start = random.randrange(self.cores)
        held = self._grab(1, start, [])
        if not held:  # none free: wait for one, holding nothing (so no deadlock)
            fd = self._open(start)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            held = [fd]
        # then more, up to the cores nobody else is computing on now (after any wait)
        if want > 1:
            held = self._grab(min(want, max(1, self.cores - busy_elsewhere())), start, held)
        return held

    def _acquire_exact(self, n: int) -> list[int]:
        start = random.randrange(self.cores)
        held = self._grab(n, start, [])
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


__all__ = ["CpuSlots", "available_cores", "busy_elsewhere", "slots_dir"]
