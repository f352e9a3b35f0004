"""Skill packages: loading, Agent Skills validation, the bundle, per-file edits, rendering."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillgrad.errors import SkillError
from skillgrad.skill.document import Skill
from skillgrad.skill.package import (
    SkillPackage,
    is_package_text,
    prompt_text,
)
from skillgrad.types import Edit

SKILL_MD = """---
name: csv-report
description: Use when asked to summarise a CSV file.
license: MIT
---
# CSV report

## Rules
- Read the file first.

## Core
<!-- skillgrad:protected core -->
Never invent numbers.
<!-- /skillgrad:protected core -->
"""
COLUMNS = "# Columns\n\nThe first row is a header.\n"


def make_package(root: Path, skill_md: str = SKILL_MD) -> Path:
    (root / "references").mkdir(parents=True)
    (root / "SKILL.md").write_text(skill_md)
    (root / "references" / "columns.md").write_text(COLUMNS)
    return root


def test_folder_loads_as_a_bundle_that_round_trips(tmp_path: Path) -> None:
    pkg = SkillPackage.load(make_package(tmp_path / "csv"))
    assert pkg.name == "csv-report" and pkg.description.startswith("Use when")
    text = Skill.load(tmp_path / "csv").text
    assert is_package_text(text) and text == pkg.bundle() == Skill.load(tmp_path / "csv").text
    assert SkillPackage.from_bundle(text) == pkg
    out = pkg.write(tmp_path / "out")
    assert (out / "SKILL.md").read_text() == SKILL_MD
    assert (out / "references" / "columns.md").read_text() == COLUMNS


def test_single_file_skills_are_untouched(tmp_path: Path) -> None:
    path = tmp_path / "skill.md"
    path.write_text("# Rules\n- be brief\n")
    skill = Skill.load(path)
    assert skill.text == "# Rules\n- be brief\n" and prompt_text(skill.text) == skill.text
    after, [res] = skill.apply([Edit("add", "Rules", "- be kind")])
    assert res.status == "applied" and after.text == "# Rules\n- be brief\n- be kind\n"


def test_chat_rendering_is_body_then_each_file_under_its_path(tmp_path: Path) -> None:
    text = Skill.load(make_package(tmp_path / "csv")).text
    shown = prompt_text(text)
    assert shown.startswith("# CSV report\n") and "name: csv-report" not in shown
    assert "\n# references/columns.md\n\n# Columns\n" in shown
    assert "skillgrad:file" not in shown


@pytest.mark.parametrize(
    ("front", "message"),
    [
        ("", "has no frontmatter"),
        ("---\ndescription: x\n---\n", "'name' is missing"),
        ("---\nname: CSV_Report\ndescription: x\n---\n", "lowercase letters, digits"),
        ("---\nname: " + "a" * 65 + "\ndescription: x\n---\n", "at most 64"),
        ("---\nname: ok\n---\n", "'description' is missing"),
        ("---\nname: ok\ndescription: " + "d" * 1025 + "\n---\n", "at most 1024"),
        ("---\nname: [unclosed\n---\n", "not valid YAML"),
    ],
)
def test_validation_names_the_problem(tmp_path: Path, front: str, message: str) -> None:
    root = tmp_path / "bad"
    make_package(root, front + "# Body\n")
    with pytest.raises(SkillError, match=r"skill package .*bad") as info:
        SkillPackage.load(root)
    assert message in str(info.value)


def test_folder_without_skill_md_and_binary_files_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillError, match=r"has no SKILL\.md"):
        Skill.load(tmp_path / "empty")
    root = make_package(tmp_path / "bin")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(SkillError, match=r"logo\.png: not UTF-8"):
        SkillPackage.load(root)


def test_edits_to_skill_md_a_reference_the_description_and_a_new_file(tmp_path: Path) -> None:
    skill = Skill.load(make_package(tmp_path / "csv"))
    edits = [
        Edit("add", "Rules", "- Put the total last."),
        Edit(
            "insert_after",
            "Columns",
            "Empty cells count as 0.",
            anchor="a header.",
            file="references/columns.md",
        ),
        Edit("description", "", "Use when asked to summarise or total a CSV file."),
        Edit("add", "Dates", "Dates are ISO 8601.", file="references/dates.md"),
    ]
    after, results = skill.apply(edits)
    assert [r.status for r in results] == ["applied"] * 4, results
    assert results[1].reason.startswith("references/columns.md: ")
    assert results[3].reason.startswith("created file references/dates.md")
    pkg = SkillPackage.from_bundle(after.text)
    files = pkg.file_map()
    assert "- Read the file first.\n- Put the total last." in files["SKILL.md"]
    assert files["references/columns.md"].endswith("a header.\nEmpty cells count as 0.\n")
    assert pkg.description == "Use when asked to summarise or total a CSV file."
    assert pkg.name == "csv-report" and "license: MIT" in files["SKILL.md"]
    assert files["references/dates.md"] == "# Dates\nDates are ISO 8601.\n"


def test_bad_edits_are_skipped_with_a_reason(tmp_path: Path) -> None:
    skill = Skill.load(make_package(tmp_path / "csv"))
    edits = [
        Edit("replace", "", "Invent freely.", anchor="Never invent numbers."),
        Edit("replace", "", "x", anchor="y", file="references/missing.md"),
        Edit("add", "", "x", file="../escape.md"),
        Edit("description", "", "d" * 1100),
        Edit("description", "", ""),
        Edit("add", "Rules", "<!-- skillgrad:file evil.md -->"),
    ]
    after, results = skill.apply(edits)
    assert after.text == skill.text
    reasons = [r.reason for r in results]
    assert all(r.status == "skipped" for r in results)
    assert reasons[0] == "SKILL.md: protected block core"
    assert "file 'references/missing.md' not found" in reasons[1]
    assert "bad file path '../escape.md'" in reasons[2]
    assert "description too long" in reasons[3] and reasons[4] == "empty description"
    assert "skillgrad:file marker" in reasons[5]


def test_protected_blocks_per_file_and_slow_update_in_skill_md(tmp_path: Path) -> None:
    root = make_package(tmp_path / "csv")
    (root / "references" / "columns.md").write_text(
        COLUMNS + "<!-- skillgrad:protected cols -->\nKeep the header.\n"
        "<!-- /skillgrad:protected cols -->\n"
    )
    skill = Skill.load(root)
    edit = Edit("delete", "", anchor="Keep the header.", file="references/columns.md")
    _, [res] = skill.apply([edit])
    assert res.status == "skipped" and res.reason == "references/columns.md: protected block cols"
    slow = Edit(
        "delete", "", anchor="Keep the header.", file="references/columns.md", source="slow_update"
    )
    after, [res] = skill.apply([slow])
    assert res.status == "applied"
    guided = Skill(after.text).with_protected_block("guidance", "Check totals twice.", "Guidance")
    pkg = SkillPackage.from_bundle(guided.text)
    assert "Check totals twice." in pkg.file_map()["SKILL.md"]
    assert "Check totals twice." not in pkg.file_map()["references/columns.md"]


def test_token_lengths_per_file(tmp_path: Path) -> None:
    pkg = SkillPackage.load(make_package(tmp_path / "csv"))
    lengths = pkg.token_lengths()
    assert set(lengths) == {"SKILL.md", "references/columns.md"}
    assert lengths["references/columns.md"] == 9 and all(v > 0 for v in lengths.values())
