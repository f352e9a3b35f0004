"""``skillgrad export`` through the real CLI on real runs: each agent's layout read back the way
that agent reads it (the file where it looks, the frontmatter parsed by a YAML parser), the
AGENTS.md section replaced alone, and nothing overwritten without --force."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from export_helpers import frontmatter
from typer.testing import CliRunner

from skillgrad.cli import app
from skillgrad.skill.package import SkillPackage

runner = CliRunner()
AGENT_SKILL_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")  # the Agent Skills name rule


def export(run: Path, fmt: str, dest: Path, *extra: str) -> tuple[int, str]:
    result = runner.invoke(app, ["export", str(run), "--to", fmt, "--dest", str(dest), *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def best(run: Path) -> str:
    return (run / "best_skill.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("fmt", "root"),
    [("claude-code", ".claude/skills"), ("codex", ".agents/skills"), ("gemini", ".gemini/skills")],
)
def test_a_skill_folder_is_where_the_agent_looks_with_its_frontmatter(
    trained: Path, tmp_path: Path, fmt: str, root: str
) -> None:
    code, output = export(trained, fmt, tmp_path)
    assert code == 0, output
    folders = list((tmp_path / root).iterdir())
    assert [f.name for f in folders] == ["toy"]  # the run's task names the skill
    front, body = frontmatter(folders[0] / "SKILL.md")
    assert front["name"] == folders[0].name and AGENT_SKILL_NAME.match(str(front["name"]))
    assert isinstance(front["description"], str) and "toy" in front["description"]
    assert body.strip() == best(trained).strip() and "UPPERCASE" in body
    assert {p.name for p in folders[0].iterdir()} == {
        "SKILL.md",
        "SKILL_CARD.md",
        "skill_card.json",
    }
    assert SkillPackage.load(folders[0]).name == "toy"  # valid by the Agent Skills conventions


def test_a_package_keeps_its_name_frontmatter_and_references(
    trained_package: Path, tmp_path: Path
) -> None:
    code, output = export(trained_package, "claude-code", tmp_path)
    assert code == 0, output
    folder = tmp_path / ".claude/skills/echo-word"
    run_pkg = trained_package / "best_skill"
    assert (folder / "SKILL.md").read_bytes() == (run_pkg / "SKILL.md").read_bytes()
    assert (folder / "references/casing.md").read_bytes() == (
        run_pkg / "references/casing.md"
    ).read_bytes()
    front, _ = frontmatter(folder / "SKILL.md")
    assert front["name"] == "echo-word" and front["license"] == "MIT"


def test_a_renamed_package_gets_that_name_in_its_frontmatter(
    trained_package: Path, tmp_path: Path
) -> None:
    code, output = export(trained_package, "codex", tmp_path, "--name", "echo-upper")
    assert code == 0, output
    front, body = frontmatter(tmp_path / ".agents/skills/echo-upper/SKILL.md")
    assert front["name"] == "echo-upper" and front["license"] == "MIT"
    _, run_body = frontmatter(trained_package / "best_skill/SKILL.md")
    assert body.strip() == run_body.strip() and "# Echo" in body


def test_a_cursor_rule_has_cursors_frontmatter(trained_package: Path, tmp_path: Path) -> None:
    code, output = export(trained_package, "cursor", tmp_path, "--description", "Echo: a word")
    assert code == 0, output
    front, body = frontmatter(tmp_path / ".cursor/rules/echo-word.mdc")
    assert front == {"description": "Echo: a word", "globs": None, "alwaysApply": False}
    assert "# references/casing.md" in body  # the package's reference, inline
    assert "skillgrad:file" not in body and "name: echo-word" not in body
    card = tmp_path / ".skillgrad/cursor/echo-word"
    assert {p.name for p in card.iterdir()} == {"SKILL_CARD.md", "skill_card.json"}


def test_agents_md_section_is_added_and_replaced_alone(
    trained: Path, trained_package: Path, tmp_path: Path
) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Project rules\n\nUse tabs.\n")
    assert export(trained, "agents-md", tmp_path)[0] == 0
    assert export(trained_package, "agents-md", tmp_path)[0] == 0
    text = agents.read_text()
    assert text.startswith("# Project rules\n\nUse tabs.\n\n<!-- skillgrad:begin toy -->\n")
    section = text.split("<!-- skillgrad:begin toy -->\n")[1].split("<!-- skillgrad:end toy -->")
    assert best(trained).strip() in section[0] and "## toy" in section[0]
    assert "<!-- skillgrad:begin echo-word -->" in section[1]
    # a hand edit of the toy section: re-exporting refuses, then --force replaces it alone
    agents.write_text(text.replace("## toy\n", "## toy\n\nHAND EDIT\n") + "Tail kept.\n")
    code, output = export(trained, "agents-md", tmp_path)
    assert code == 2 and "--force" in output and "HAND EDIT" in agents.read_text()
    assert export(trained, "agents-md", tmp_path, "--force")[0] == 0
    assert agents.read_text() == text + "Tail kept.\n"


def test_a_broken_marker_is_refused_with_its_line(trained: Path, tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Rules\n<!-- skillgrad:begin toy -->\nhalf a section\n")
    code, output = export(trained, "agents-md", tmp_path, "--force")
    assert code == 2 and "AGENTS.md:2" in output and "no end marker" in output
    assert agents.read_text() == "# Rules\n<!-- skillgrad:begin toy -->\nhalf a section\n"
    assert not (tmp_path / ".skillgrad").exists()  # nothing written


def test_nothing_is_overwritten_without_force(trained: Path, tmp_path: Path) -> None:
    assert export(trained, "claude-code", tmp_path)[0] == 0
    skill = tmp_path / ".claude/skills/toy/SKILL.md"
    skill.write_text("my own edit\n")
    (skill.parent / "notes.md").write_text("stale\n")
    code, output = export(trained, "claude-code", tmp_path)
    assert code == 2 and "already there" in output and "--force" in output
    assert "Traceback" not in output and skill.read_text() == "my own edit\n"
    code, output = export(trained, "claude-code", tmp_path, "--force")
    assert code == 0 and "replaced" in output
    assert "UPPERCASE" in skill.read_text() and not (skill.parent / "notes.md").exists()
    assert [p.name for p in skill.parents[1].iterdir()] == ["toy"]  # no temp folders left
