"""``Catalog``: the local models by name — which exist, which are here, and the verified path.

The default catalog is the built-in entries plus the user's own, from
``$XDG_CONFIG_HOME/skillgrad/catalog.yaml`` (default ``~/.config/skillgrad/catalog.yaml``);
a ``Catalog`` built with other entries or another store serves tests and embedding programs.
``require`` is what model loading calls: it returns a copy verified since its last change, or
raises an ``AssetError`` that names the pull command.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from skillgrad.errors import AssetError
from skillgrad.models.catalog.base import LogProgress, PullProgress
from skillgrad.models.catalog.builtin import BUILTIN
from skillgrad.models.catalog.entries import CatalogEntry, load_user_entries
from skillgrad.models.catalog.pull import PullResult, pull, size_text
from skillgrad.models.catalog.store import ModelStore
from skillgrad.plugins import did_you_mean

log = logging.getLogger(__name__)


def user_catalog_path() -> Path:
    root = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(root, "skillgrad", "catalog.yaml")


@dataclass(frozen=True)
class ModelStatus:
    """What ``skillgrad models list`` shows for one entry (no hashing: stamps only)."""

    entry: CatalogEntry
    path: Path | None
    where: str
    """``cache``, ``package`` or ``""`` (absent)."""
    verified: bool


class Catalog:
    """Entries by name over one ``ModelStore``."""

    def __init__(
        self, entries: Iterable[CatalogEntry] = BUILTIN, store: ModelStore | None = None
    ) -> None:
        self.store = store or ModelStore()
        self._entries: dict[str, CatalogEntry] = {}
        for entry in entries:
            if entry.name in self._entries:
                raise AssetError(f"the model catalog names {entry.name!r} twice")
            self._entries[entry.name] = entry

    @classmethod
    def default(cls, store: ModelStore | None = None) -> Catalog:
        """The built-in entries plus the user catalog file's."""
        return cls([*BUILTIN, *load_user_entries(user_catalog_path())], store)

    @property
    def entries(self) -> list[CatalogEntry]:
        return list(self._entries.values())

    def get(self, name: str) -> CatalogEntry:
        if name not in self._entries:
            known = sorted(self._entries)
            raise AssetError(
                f"{name!r} is not in the local model catalog.{did_you_mean(name, known)} Known: "
                f"{', '.join(known)}. For any other GGUF set model_path: /path/to/file.gguf, or "
                f"add an entry (name, file, bytes, sha256) to {user_catalog_path()}"
            )
        return self._entries[name]

    def status(self, name: str) -> ModelStatus:
        entry = self.get(name)
        copies = self.store.copies(entry)
        for path, where in copies:
            if self.store.is_stamped(path, entry):
                return ModelStatus(entry, path, where, True)
        if not copies:
            return ModelStatus(entry, None, "", False)
        return ModelStatus(entry, copies[0][0], copies[0][1], False)

    def require(self, name: str) -> Path:
        """The path of a verified copy of ``name``: stamped, or hashed now (then stamped).
        Raises ``AssetError`` naming the pull command when none is here or none verifies."""
        entry = self.get(name)
        copies = self.store.copies(entry)
        pull_cmd = f"skillgrad models pull {name}"
        if not copies:
            other = f", or {entry.installed.install}" if entry.installed else ""
            raise AssetError(
                f"local model {name} is not installed. Run: {pull_cmd}  "
                f"({size_text(entry.bytes)} into {self.store.root}{other})"
            )
        for path, _where in copies:
            if self.store.is_stamped(path, entry):
                return path
        for path, _where in copies:
            log.info("verifying %s (%s, first use since it changed)", path, size_text(entry.bytes))
            if self.store.verify(path, entry):
                return path
        raise AssetError(
            f"{copies[0][0]} does not match the pinned size and SHA-256 of {name} (changed or "
            f"damaged since it was verified), so it is not used. Run: {pull_cmd}  (replaces it)"
        )

    def pull(self, name: str, progress: PullProgress | None = None) -> PullResult:
        return pull(self.get(name), self.store, progress or LogProgress())


__all__ = ["Catalog", "ModelStatus", "user_catalog_path"]
