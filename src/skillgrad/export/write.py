"""Writing an export into a project: every target checked before anything is written (no path
out of the destination, no symlink followed below it, nothing existing replaced without
``--force``), then each file written aside and renamed into place.
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skillgrad.export.layouts import File, Folder, Section, Unit, merge_section
from skillgrad.export.source import ExportError


@dataclass(frozen=True)
class Written:
    """What one unit did: its path (relative to the destination) and whether it replaced
    something that was there."""

    path: str
    replaced: bool
    folder: bool = False


def target(dest: Path, rel: str) -> Path:
    """``dest / rel`` when ``rel`` stays inside ``dest`` and no existing part of the path below
    ``dest`` is a symlink (writing through one would write elsewhere)."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise ExportError(f"refusing to write {rel!r}: not a path inside the destination")
    path = dest
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise ExportError(
                f"{path} is a symlink (to {os.readlink(path)}); the export does not write "
                "through links. Remove the link, or export to another --dest"
            )
    return path


def check_units(dest: Path, units: list[Unit], force: bool) -> None:
    """Refuse before writing anything: a destination that is not a folder, an existing file
    or folder the export would replace (without ``force``), a shared file that is not text."""
    if not dest.is_dir():
        raise ExportError(f"--dest {dest}: no such folder; create it, or pass the project folder")
    taken = []
    for unit in units:
        path = target(dest, unit.path)
        if isinstance(unit, Section):
            if path.exists():
                merge_section(_read_shared(path), unit, str(path))  # broken markers: refused now
                if _has_section(path, unit) and not force:
                    taken.append(f"{path} (its '{unit.name}' section)")
            continue
        if path.exists() and not force:
            taken.append(str(path))
        elif path.exists() and isinstance(unit, Folder) != path.is_dir():
            raise ExportError(
                f"{path}: exists as a {'file' if path.is_file() else 'folder'}; "
                "remove it by hand, the export will not replace it with --force"
            )
    if taken:
        raise ExportError(
            "already there: " + "; ".join(taken) + ". Pass --force to replace it (only what "
            "this export writes is replaced), or export to another --dest or --name"
        )


def write_units(dest: Path, units: list[Unit], force: bool) -> list[Written]:
    """Check every unit, then write them in order."""
    check_units(dest, units, force)
    done = []
    for unit in units:
        path = target(dest, unit.path)
        if isinstance(unit, Folder):
            done.append(Written(unit.path, _write_folder(path, unit.files), folder=True))
        elif isinstance(unit, File):
            replaced = path.exists()
            _write_file(path, unit.text)
            done.append(Written(unit.path, replaced))
        else:
            text, replaced = merge_section(
                _read_shared(path) if path.exists() else "", unit, str(path)
            )
            _write_file(path, text)
            done.append(Written(unit.path, replaced))
    return done


def _has_section(path: Path, unit: Section) -> bool:
    return merge_section(_read_shared(path), unit, str(path))[1]


def _read_shared(path: Path) -> str:
    if not path.is_file():
        raise ExportError(f"{path}: not a regular file; the export adds its section to a file")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ExportError(f"{path}: not UTF-8 text; the export will not edit it") from None


def _write_file(path: Path, text: str) -> None:
    """Write beside ``path`` and rename over it (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        # "x" creates with the umask's mode: a project file, not a private run file
        with open(tmp, "x", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_folder(path: Path, files: dict[str, str]) -> bool:
    """Replace folder ``path`` with ``files`` (written aside, then renamed); whether one was
    there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{secrets.token_hex(6)}"
    tmp.mkdir()
    try:
        for rel, text in files.items():
            _write_file(target(tmp, rel), text)
        if not path.exists():
            os.replace(tmp, path)
            return False
        old = path.parent / f".{path.name}.old-{os.getpid()}"
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
        return True
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__ = ["Written", "check_units", "target", "write_units"]
