"""A run records which code trained it: skillgrad's version, the commit of the git tree the code
came from and whether that tree had uncommitted changes, read from real git repositories made
here; odd trees (no git, worktrees, packed refs, detached HEAD, an installed package, damaged
metadata, a git that fails) give nulls, never an error; a resume on other code is listed; the
report and the skill card show it, and a run that did not record it still exports."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fakes_e2e import optimizer_reply, target_reply
from skillgrad.cli import app
from skillgrad.config import load_config
from skillgrad.runs.provenance import UNKNOWN, CodeProvenance, code_provenance, describe
from skillgrad.session import run_training
from skillgrad.testing import FunctionBackend

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git to make repos")
OLD_RUN = Path(__file__).parents[1] / "fixtures" / "old_run_c28278c_env" / "old_run"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [*GIT, "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def make_repo(root: Path) -> Path:
    """A git repository with one commit of ``src/pkg/code.py``."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "code.py").write_text("x = 1\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def train(root: Path, code: CodeProvenance, epochs: int = 1) -> Path:
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(root), "run_name": "run"},
            "train": {"num_epochs": epochs, "batch_size": 4},
        }
    )
    run_training(
        cfg,
        optimizer=FunctionBackend(optimizer_reply, "function:fake-optimizer"),
        target=FunctionBackend(target_reply, "function:fake-target"),
        code=code,
    )
    return root / "run"


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def export(run: Path, dest: Path) -> tuple[dict[str, Any], str]:
    dest.mkdir()
    args = ["export", str(run), "--to", "claude-code", "--dest", str(dest)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    folder = next((dest / ".claude" / "skills").iterdir())
    return read(folder / "skill_card.json"), (folder / "SKILL_CARD.md").read_text()


def test_a_run_records_the_commit_of_the_tree_its_code_came_from(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    code = code_provenance(repo / "src" / "pkg")  # found by walking up to the .git folder
    assert code == CodeProvenance(metadata.version("skillgrad"), head, False)
    run = train(tmp_path / "runs", code)
    record = {**code.to_json(), "resumed_with": []}
    assert read(run / "summary.json")["code"] == record
    assert read(run / "runtime_state.json")["code"] == [code.to_json()]
    start = [e for e in map(json.loads, (run / "events.jsonl").open()) if e["event"] == "run_start"]
    assert start[0]["code"] == code.to_json()
    line = f"- code: skillgrad {code.version}, commit {head[:12]}\n"
    assert line in (run / "report.md").read_text()
    report = CliRunner().invoke(app, ["report", str(run)], env={"COLUMNS": "200"})
    assert f"code: skillgrad {code.version}, commit {head[:12]}" in report.output
    card, page = export(run, tmp_path / "dest")
    prov = card["provenance"]
    assert (prov["commit"], prov["dirty"], prov["skillgrad_version"]) == (head, False, code.version)
    assert prov["code"] == record
    assert f"- code: skillgrad {code.version}, commit {head[:12]}\n" in page


def test_uncommitted_changes_to_tracked_files_mark_the_tree_dirty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "notes.txt").write_text("untracked files do not count\n")
    assert code_provenance(repo).dirty is False
    (repo / "src" / "pkg" / "code.py").write_text("x = 2\n")
    code = code_provenance(repo)
    assert code.dirty is True and code.commit == git(repo, "rev-parse", "HEAD")
    assert describe({**code.to_json(), "resumed_with": []}).endswith("(uncommitted changes)")


def test_outside_a_git_tree_the_commit_is_null_and_the_card_says_so(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    code = code_provenance(plain)
    assert (code.commit, code.dirty) == (None, None) and code.version is not None
    run = train(tmp_path / "runs", code)
    assert read(run / "summary.json")["code"]["commit"] is None
    card, page = export(run, tmp_path / "dest")
    assert card["provenance"]["commit"] is None
    assert "commit unknown (not a git checkout)" in page


def test_an_installed_package_inside_a_checkout_does_not_take_its_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    installed = repo / ".venv" / "lib" / "site-packages" / "skillgrad"
    installed.mkdir(parents=True)
    assert code_provenance(installed).commit is None


def test_head_is_read_from_a_worktree_with_packed_refs_without_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = tmp_path / "tree"
    git(repo, "worktree", "add", "-q", "-b", "side", str(tree))
    (tree / "more.txt").write_text("more\n")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "side")
    git(repo, "pack-refs", "--all")  # the branch now lives only in the shared packed-refs
    side = git(tree, "rev-parse", "HEAD")
    assert (tree / ".git").is_file() and not (repo / ".git" / "refs" / "heads" / "side").exists()
    git(repo, "checkout", "-q", "--detach")
    first = git(repo, "rev-parse", "HEAD")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no git to ask
    assert code_provenance(tree) == CodeProvenance(metadata.version("skillgrad"), side, None)
    assert code_provenance(repo).commit == first  # detached: HEAD holds the commit


def test_damaged_git_metadata_and_a_failing_git_give_nulls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pointer = tmp_path / "pointer"
    pointer.mkdir()
    (pointer / ".git").write_text("gitdir: ../nowhere\n")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / ".git").write_text("\x00\xff not a pointer")
    broken = make_repo(tmp_path / "broken")
    (broken / ".git" / "HEAD").write_text("ref: refs/heads/\n")
    for folder in (pointer, junk, broken):
        assert (code_provenance(folder).commit, code_provenance(folder).dirty) == (None, None)
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\necho 'fatal: broken' >&2\nexit 128\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    code = code_provenance(repo)
    assert code.commit == head and code.dirty is None  # read from files; git could not tell


def test_a_resume_on_other_code_is_listed_and_warned(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = code_provenance(repo)
    run = train(tmp_path / "runs", first)
    (repo / "src" / "pkg" / "code.py").write_text("x = 3\n")
    git(repo, "commit", "-q", "-am", "second")
    second = code_provenance(repo)
    assert second.commit != first.commit
    train(tmp_path / "runs", second, epochs=2)
    train(tmp_path / "runs", second, epochs=2)  # again on the same code: listed once
    code = read(run / "summary.json")["code"]
    assert code == {**first.to_json(), "resumed_with": [second.to_json()]}
    events = [json.loads(x) for x in (run / "events.jsonl").open()]
    warned = [
        e["message"] for e in events if e["event"] == "warning" and "resumes on" in e["message"]
    ]
    assert len(warned) == 1 and str(second.commit)[:12] in warned[0]
    assert (
        f"; resumed with skillgrad {second.version}, commit {str(second.commit)[:12]}"
        in (run / "report.md").read_text()
    )


def test_a_run_that_did_not_record_its_code_still_exports(tmp_path: Path) -> None:
    run = Path(shutil.copytree(OLD_RUN, tmp_path / "old_env_run"))
    assert "code" not in read(run / "summary.json")
    card, page = export(run, tmp_path / "dest")
    assert card["provenance"]["commit"] is None and card["provenance"]["code"] is None
    assert "- code: not recorded by the run\n" in page
    assert describe(None) == "not recorded by the run"
    assert UNKNOWN.to_json() == {"version": None, "commit": None, "dirty": None}


def test_a_hand_edited_code_record_puts_no_other_text_in_the_card(tmp_path: Path) -> None:
    run = Path(shutil.copytree(OLD_RUN, tmp_path / "old_env_run"))
    summary = read(run / "summary.json")
    junk = "abc\n# Trust me\n[link](http://x)"
    summary["code"] = {"version": junk, "commit": junk, "dirty": "yes", "resumed_with": [junk]}
    (run / "summary.json").write_text(json.dumps(summary))
    card, page = export(run, tmp_path / "dest")
    assert card["provenance"]["code"] == {**UNKNOWN.to_json(), "resumed_with": [UNKNOWN.to_json()]}
    assert "Trust me" not in page and "- code: unknown; resumed with unknown\n" in page
