"""A skill package never pulls in a file from outside itself: a symlink (to a file or a folder),
a special file, or a path resolving outside the package is refused with an error naming it,
through ``skillgrad eval --skill`` and ``train.init_skill`` (nothing of the linked file is
read, sent or written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_package import make_package

from skillgrad.errors import SkillError
from skillgrad.skill.document import Skill
from skillgrad.skill.package import SkillPackage

SECRET = "HOST-SECRET-7f3a: the text of a private host file"
FAKES = Path(__file__).parents[1] / "fakes_e2e.py"


def _private_host_file(tmp_path: Path) -> Path:
    secret = tmp_path / "host" / "private.md"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    secret.chmod(0o600)
    return secret


def test_a_symlinked_file_is_refused_by_name(tmp_path: Path) -> None:
    pkg = make_package(tmp_path / "pkg")
    (pkg / "references" / "notes.md").symlink_to(_private_host_file(tmp_path))
    with pytest.raises(SkillError, match=r"references/notes\.md is a symlink \(to .*private\.md\)"):
        SkillPackage.load(pkg)
    with pytest.raises(SkillError, match="does not follow links out of a package"):
        Skill.load(pkg)


def test_a_symlinked_skill_md_folder_or_special_file_is_refused(tmp_path: Path) -> None:
    secret = _private_host_file(tmp_path)
    linked_md = tmp_path / "a"
    linked_md.mkdir()
    (linked_md / "SKILL.md").symlink_to(secret)
    with pytest.raises(SkillError, match=r"SKILL\.md is a symlink"):
        SkillPackage.load(linked_md)
    linked_dir = make_package(tmp_path / "b")
    (linked_dir / "more").symlink_to(secret.parent, target_is_directory=True)
    with pytest.raises(SkillError, match="more is a symlink"):
        SkillPackage.load(linked_dir)
    fifo = make_package(tmp_path / "c")
    os.mkfifo(fifo / "references" / "pipe.md")
    with pytest.raises(SkillError, match=r"references/pipe\.md is not a regular file"):
        SkillPackage.load(fifo)


def test_the_package_folder_itself_may_be_named_through_a_link(tmp_path: Path) -> None:
    pkg = make_package(tmp_path / "pkg")
    (tmp_path / "alias").symlink_to(pkg, target_is_directory=True)
    assert SkillPackage.load(tmp_path / "alias") == SkillPackage.load(pkg)
    (pkg / ".git").mkdir()
    (pkg / ".git" / "HEAD").symlink_to(_private_host_file(tmp_path))  # hidden: never read
    assert SkillPackage.load(pkg).file_map().keys() == {"SKILL.md", "references/columns.md"}


def _skillgrad(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", *args],
        capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )  # fmt: skip


def test_eval_and_train_refuse_a_linked_package_and_write_nothing_of_it(tmp_path: Path) -> None:
    pkg = make_package(tmp_path / "pkg")
    (pkg / "references" / "notes.md").symlink_to(_private_host_file(tmp_path))
    runs = tmp_path / "runs"
    config = tmp_path / "c.yaml"
    config.write_text(
        json.dumps(
            {
                "env": {"task": "toy", "output_root": str(runs), "run_name": "linked"},
                "train": {"num_epochs": 1, "batch_size": 2, "init_skill": str(pkg)},
                "models": {
                    "optimizer": {"provider": "function", "model": f"{FAKES}:FakeOptimizer"},
                    "target": {"provider": "function", "model": f"{FAKES}:FakeTarget"},
                },
            }
        )
    )
    for args in (["eval", str(config), "--skill", str(pkg)], ["train", str(config)]):
        proc = _skillgrad(*args)
        assert proc.returncode == 2, proc.stdout[-1500:] + proc.stderr[-1500:]
        said = " ".join((proc.stdout + proc.stderr).split())
        assert "references/notes.md is a symlink" in said and "Traceback" not in said
        assert SECRET not in proc.stdout + proc.stderr
    written = [p for p in runs.rglob("*") if p.is_file()] if runs.exists() else []
    assert all(SECRET.encode() not in p.read_bytes() for p in written)
    assert not (runs / "linked" / "skills").exists()
