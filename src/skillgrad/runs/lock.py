"""One run directory, one writer: the ``run.lock`` file every writing process holds.

The lock is an exclusive ``flock`` on ``<run>/run.lock`` (the kernel drops it when the holder dies,
however it dies) plus a JSON record of the holder (pid, host, process start time, command) that
names it in the refusal message. A lock file whose ``flock`` is free but whose record names a
process is judged by that record: a pid that is gone on this host, or a pid reused by a process
with a different start time, is a lock left by a killed run and is taken over; a live holder or a
holder on another host (which this machine cannot check) is refused. Readers (report, diff, blame,
dashboard) never take the lock.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.runs.io import open_private, private_dirs

LOCK_NAME = "run.lock"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (Linux), None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields follow the last ')'
    return stat.rsplit(")", 1)[-1].split()


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (Linux ``/proc``), None when unknown."""
    fields = _stat_fields(pid) or []
    try:
        return int(fields[19])  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine and is not a zombie: a killed
    process whose parent has not reaped it yet holds no lock and writes nothing. (An orphan
    killed with its sweep waits for init, which may take a second, or for ever where a
    container's first process never reaps.)"""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    fields = _stat_fields(pid)
    return not (fields and fields[0] in ("Z", "X"))


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a run directory's lock."""

    pid: int
    host: str
    start_time: int | None
    started: str
    command: str

    @classmethod
    def me(cls) -> Holder:
        pid = os.getpid()
        return cls(
            pid=pid,
            host=socket.gethostname(),
            start_time=process_start_time(pid),
            started=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            command=" ".join(sys.argv)[:300],
        )

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The record in a lock file, or None when it is empty or unreadable."""
        try:
            data: Any = json.loads(text)
            return cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                start_time=None if data.get("start_time") is None else int(data["start_time"]),
                started=str(data.get("started", "?")),
                command=str(data.get("command", "")),
            )
        except (ValueError, TypeError, KeyError):
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host!r}, started {self.started} ({self.command!r})"

    def state(self) -> str:
        """``alive``, ``gone`` (killed or exited) or ``unknown`` (another host)."""
        if self.host != socket.gethostname():
            return "unknown"
        if not pid_alive(self.pid):
            return "gone"
        now = process_start_time(self.pid)
        if self.start_time is not None and now is not None and now != self.start_time:
            return "gone"  # the pid was reused by a later process
        return "alive"


class RunLock:
    """The held lock of one run directory; ``release()`` (or process death) frees it."""

    def __init__(self, path: Path, fd: int, taken_over: Holder | None) -> None:
        self.path = path
        self._fd: int | None = fd
        self.taken_over = taken_over  # the killed run whose stale lock was taken over, if any

    @classmethod
    def acquire(cls, root: Path) -> RunLock:
        """Take the lock of ``root`` or raise RunDirError naming the process that holds it."""
        try:
            return cls._acquire(root)
        except OSError as exc:
            raise RunDirError(
                f"{root}: cannot create or lock the run directory ({exc.strerror or exc}); check "
                "its permissions, or choose another env.output_root / env.run_name."
            ) from exc

    @classmethod
    def _acquire(cls, root: Path) -> RunLock:
        private_dirs(root)
        path = root / LOCK_NAME
        while True:
            fd = open_private(path, os.O_RDWR)  # never through a planted symlink
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = Holder.parse(_read_fd(fd))
                os.close(fd)
                raise RunDirError(_refusal(root, holder, "is being written by")) from None
            # a releaser may have unlinked the file between our open and our flock: retry
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = Holder.parse(_read_fd(fd))
        if previous is not None and previous.state() != "gone" and not _mine(previous):
            os.close(fd)
            why = "is being written by" if previous.state() == "alive" else "is locked by"
            raise RunDirError(_refusal(root, previous, why))
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(Holder.me().__dict__).encode("utf-8"), 0)
        os.fsync(fd)
        return cls(path, fd, previous)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        if self._fd is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None


def _mine(holder: Holder) -> bool:
    """A record of this very process whose flock nobody holds: a lock it dropped unreleased."""
    me = Holder.me()
    return (holder.pid, holder.host, holder.start_time) == (me.pid, me.host, me.start_time)


def _read_fd(fd: int) -> str:
    return os.pread(fd, 65536, 0).decode("utf-8", errors="replace")


def _refusal(root: Path, holder: Holder | None, verb: str) -> str:
    lock = root / LOCK_NAME
    who = holder.describe() if holder else "another process (its lock record is unreadable)"
    msg = f"{root} {verb} {who}; one run directory has one writer."
    if holder is not None and holder.state() == "unknown":
        return (
            f"{msg} This machine cannot check a process on another host. If no skillgrad "
            f"process on {holder.host!r} is writing this run, delete {lock} and re-run."
        )
    return (
        f"{msg} Wait for it to finish (or stop it), then re-run the same command to resume; "
        "use --fresh (or another env.run_name) to start a separate run. "
        "report, diff, blame and dashboard can read the run meanwhile."
    )


__all__ = ["LOCK_NAME", "Holder", "RunLock", "pid_alive", "process_start_time"]
