"""Skill packages in a run directory: every version and the best one as ready-to-install folders.

For a package run, ``skills/skill_vNNNN.md`` holds the version's bundle text (what diff, blame
and the report read, file markers included) and ``skills/skill_vNNNN/`` the installable folder;
``best_skill/`` is the best package and ``best_skill.md`` its ``SKILL.md``. A folder is written
beside its final name and renamed into place, so a kill never leaves a half-written package
under a final name (leftovers are named ``.NAME.tmp-*`` / ``.NAME.old-*`` and removed).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from skillgrad.runs.io import PRIVATE_DIR, PRIVATE_FILE, private_dirs
from skillgrad.skill.package import SKILL_FILE, SkillPackage, is_package_text


def write_package_folder(folder: Path, bundle: str) -> None:
    """Replace ``folder`` with the package of ``bundle`` (written aside, then renamed)."""
    private_dirs(folder.parent)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.tmp-"))
    try:
        SkillPackage.from_bundle(bundle).write(tmp)
        for path in tmp.rglob("*"):  # private like every file of the run directory
            path.chmod(PRIVATE_DIR if path.is_dir() else PRIVATE_FILE)
        if folder.exists():
            old = folder.parent / f".{folder.name}.old-{os.getpid()}"
            os.replace(folder, old)
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_torn_folders(root: Path) -> None:
    """Folders a kill left half-written or half-replaced (never under a final name)."""
    for pattern in (".*.tmp-*", ".*.old-*"):
        for path in list(root.rglob(pattern)):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)


def best_skill_text(skill: str) -> str:
    """What ``best_skill.md`` holds: the skill itself, or a package's ``SKILL.md``."""
    if not is_package_text(skill):
        return skill
    return SkillPackage.from_bundle(skill).file_map()[SKILL_FILE]


def write_version_folder(version_file: Path, skill: str) -> None:
    """``skills/skill_vNNNN/`` beside ``skills/skill_vNNNN.md`` when ``skill`` is a package."""
    if is_package_text(skill):
        write_package_folder(version_file.with_suffix(""), skill)


def write_best_folder(run_root: Path, skill: str) -> None:
    """``best_skill/`` (ready to install) when the best skill is a package."""
    if is_package_text(skill):
        write_package_folder(run_root / "best_skill", skill)


__all__ = [
    "best_skill_text",
    "remove_torn_folders",
    "write_best_folder",
    "write_package_folder",
    "write_version_folder",
]
