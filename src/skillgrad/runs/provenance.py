"""Which code ran: skillgrad's version, the git commit of its source tree and whether that tree
had uncommitted changes. Recorded when a run starts (``TrainState.code``, then summary.json's
``code``), by ``skillgrad eval --out`` and in a sweep's summary; the skill card shows it.

Finding it never fails a run: no git, an install from a wheel, a damaged repository or a git
that hangs give ``None`` for what could not be told.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 5.0
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")  # sha1 and sha256 repositories
_VERSION = re.compile(r"^[0-9A-Za-z.+!_-]{1,64}$")  # a version read back is text put in a page
# an installed package: a virtualenv inside a checkout must not lend it the checkout's commit
_INSTALLED = {"site-packages", "dist-packages"}
SHORT = 12


@dataclass(frozen=True)
class CodeProvenance:
    """``version``: the installed skillgrad distribution's; ``commit``: HEAD of the git tree
    the code was imported from; ``dirty``: tracked files differ from that commit (None: not a
    git tree, or no ``git`` to ask)."""

    version: str | None = None
    commit: str | None = None
    dirty: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "commit": self.commit, "dirty": self.dirty}

    @classmethod
    def from_json(cls, data: Any) -> CodeProvenance:
        """A record read back; anything that is not one gives the unknown record."""
        if not isinstance(data, dict):
            return cls()
        version, commit, dirty = data.get("version"), data.get("commit"), data.get("dirty")
        return cls(
            version=version if isinstance(version, str) and _VERSION.match(version) else None,
            commit=commit if isinstance(commit, str) and _SHA.match(commit) else None,
            dirty=dirty if isinstance(dirty, bool) else None,
        )

    @property
    def known(self) -> bool:
        return self.version is not None or self.commit is not None


UNKNOWN = CodeProvenance()
"""The start of a run written before its code was recorded."""


def code_provenance(source: Path | None = None) -> CodeProvenance:
    """The code at ``source`` (default: this package's folder): the installed version, and the
    commit and dirty flag of the git tree holding ``source``."""
    start = Path(source) if source is not None else Path(__file__).resolve().parents[1]
    worktree, git_dir = find_git(start) or (None, None)
    commit = head_commit(worktree, git_dir) if worktree and git_dir else None
    dirty = is_dirty(worktree) if worktree and commit else None
    return CodeProvenance(version=_version(), commit=commit, dirty=dirty)


def _version() -> str | None:
    try:
        return metadata.version("skillgrad")
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None


def find_git(start: Path) -> tuple[Path, Path] | None:
    """The work tree holding ``start`` and its git directory: a ``.git`` folder, or a ``.git``
    file (``gitdir: ...``, as a worktree or submodule has). None for an installed package."""
    try:
        here = start.resolve()
        for folder in (here, *here.parents):
            if folder.name in _INSTALLED:
                return None
            dot = folder / ".git"
            if dot.is_dir():
                return folder, dot
            if dot.is_file():
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return None
                target = Path(text.removeprefix("gitdir:").strip())
                git_dir = target if target.is_absolute() else folder / target
                return (folder, git_dir) if git_dir.is_dir() else None
    except OSError:
        return None
    return None


def head_commit(worktree: Path, git_dir: Path) -> str | None:
    """HEAD's commit read from the git directory's files (loose or packed refs; a worktree's
    refs live in its common directory); ``git rev-parse HEAD`` when they do not tell."""
    try:
        found = _read_head(git_dir)
    except (OSError, UnicodeDecodeError):
        found = None
    if found is not None:
        return found
    out = _git(worktree, "rev-parse", "--verify", "--quiet", "HEAD")
    value = out.strip() if out is not None else ""
    return value if _SHA.match(value) else None


def _read_head(git_dir: Path) -> str | None:
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if _SHA.match(head):  # detached
        return head
    if not head.startswith("ref:"):
        return None
    ref = head.removeprefix("ref:").strip()
    common = _common_dir(git_dir)
    for folder in dict.fromkeys((git_dir, common)):
        loose = folder / ref
        if loose.is_file():
            value = loose.read_text(encoding="utf-8").strip()
            return value if _SHA.match(value) else None
    return _packed_ref(common / "packed-refs", ref)


def _common_dir(git_dir: Path) -> Path:
    """Where a worktree's shared refs are (its ``commondir`` file); the git dir itself else."""
    pointer = git_dir / "commondir"
    if not pointer.is_file():
        return git_dir
    target = Path(pointer.read_text(encoding="utf-8").strip())
    return target if target.is_absolute() else git_dir / target


def _packed_ref(path: Path, ref: str) -> str | None:
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == ref and _SHA.match(parts[0]):
            return parts[0]
    return None


def is_dirty(worktree: Path) -> bool | None:
    """Whether tracked files differ from HEAD (untracked files do not count); None without
    ``git`` or when it fails or takes longer than ``GIT_TIMEOUT_S``."""
    out = _git(worktree, "status", "--porcelain", "--untracked-files=no")
    return None if out is None else bool(out.strip())


def _git(worktree: Path, *args: str) -> str | None:
    exe = shutil.which("git")
    if exe is None:
        return None
    # no index.lock taken, no prompt, no pager: a status must never disturb the user's repo
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            [exe, "-C", str(worktree), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def written_by(
    records: Sequence[CodeProvenance], now: CodeProvenance
) -> tuple[CodeProvenance, ...]:
    """The code that wrote a run once it resumes on ``now``: its start record first (``UNKNOWN``
    for a run begun before records were kept), then each code that differed from the one
    before it (a run resumed on A, then B, then A again lists A, B, A)."""
    if not records:
        return (UNKNOWN, now)
    return tuple(records) if records[-1] == now else (*records, now)


def code_summary(records: Sequence[CodeProvenance]) -> dict[str, Any] | None:
    """summary.json's ``code``: the start's record, and ``resumed_with``: each different code a
    resume ran afterwards (empty: the whole run ran on its start's code). None: no record."""
    if not records:
        return None
    return {**records[0].to_json(), "resumed_with": [r.to_json() for r in records[1:]]}


def read_code(code: Any) -> dict[str, Any] | None:
    """summary.json's ``code`` as read back from a file: what is not a version, a commit or a
    flag becomes null, so a damaged or hand-edited record cannot put other text in a page.
    None: the run did not record its code."""
    if not isinstance(code, dict):
        return None
    later = code.get("resumed_with")
    rows = later if isinstance(later, list) else []
    return code_summary([CodeProvenance.from_json(r) for r in (code, *rows)])


def describe(code: Any) -> str:
    """One line for people: ``skillgrad 0.1.0, commit 0123456789ab (uncommitted changes)``,
    and each different code that resumed the run; 'not recorded by the run' without a record."""
    clean = read_code(code)
    if clean is None:
        return "not recorded by the run"
    text = _one(CodeProvenance.from_json(clean))
    if clean["resumed_with"]:
        text += "; resumed with " + ", then ".join(
            _one(CodeProvenance.from_json(r)) for r in clean["resumed_with"]
        )
    return text


def _one(record: CodeProvenance) -> str:
    if not record.known:
        return "unknown"
    version = f"skillgrad {record.version or '(version unknown)'}"
    if record.commit is None:
        return f"{version}, commit unknown (not a git checkout)"
    flag = {True: " (uncommitted changes)", False: "", None: " (clean or not: unknown)"}
    return f"{version}, commit {record.commit[:SHORT]}{flag[record.dirty]}"


__all__ = [
    "GIT_TIMEOUT_S",
    "UNKNOWN",
    "CodeProvenance",
    "code_provenance",
    "code_summary",
    "describe",
    "find_git",
    "head_commit",
    "is_dirty",
    "read_code",
    "written_by",
]
