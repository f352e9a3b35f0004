"""Diff between skill versions and blame of best_skill.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_runs import INITIAL_SKILL
from skillgrad.errors import RunDirError
from skillgrad.report.provenance import (
    blame,
    diff_html,
    diff_rows,
    skill_diff,
    skill_diff_html,
)


def test_default_diff_is_initial_vs_best(run_dir: Path) -> None:
    text = skill_diff(run_dir)
    assert text.splitlines()[0] == "--- step 0 (skill_v0000.md)"
    assert text.splitlines()[1] == "+++ best (v0006)"
    assert "-Repeat the word given by the user." in text
    assert "+Repeat exactly the single word given by the user." in text
    assert "+- Keep the original spelling." in text
    # step 7 (slow update, after the best) is not part of the best skill
    assert "whitespace" not in text


def test_diff_between_steps_resolves_rejected_steps(run_dir: Path) -> None:
    # a step without its own version file resolves to the latest version before it
    (run_dir / "skills" / "skill_v0005.md").unlink()
    text = skill_diff(run_dir, 5, 7)
    assert "--- step 5 (skill_v0004.md)" in text and "+++ step 7 (skill_v0007.md)" in text
    added = [x for x in text.splitlines() if x.startswith("+") and not x.startswith("+++")]
    assert added == ["+- Keep the original spelling.", "+- Ignore surrounding whitespace."]
    assert skill_diff(run_dir, 4, 5) == ""
    with pytest.raises(RunDirError, match="step must be >= 0"):
        skill_diff(run_dir, -1, 2)


def test_diff_html_escapes_and_marks_lines(run_dir: Path) -> None:
    page = skill_diff_html(run_dir, 0, 3)
    assert '<span class="add">+ ## Rules</span>' in page
    assert '<span class="ctx">  # Echo skill</span>' in page
    rows = diff_rows("a\n<b>\n", "a\n<c>\n")
    assert rows == [(" ", "a"), ("-", "<b>"), ("+", "<c>")]
    assert "&lt;c&gt;" in diff_html("a\n<b>\n", "a\n<c>\n") and "<c>" not in diff_html("", "<c>")


def test_blame_attributes_every_line(run_dir: Path) -> None:
    lines = blame(run_dir)
    best = (run_dir / "best_skill.md").read_text().splitlines()
    assert [b.text for b in lines] == best
    by_text = {b.text: b for b in lines}
    assert by_text["# Echo skill"].source == "initial"
    assert by_text["Answer with the word only."].source == "initial"
    upper = by_text["Write the word in UPPER CASE."]
    assert (upper.source, upper.step, upper.epoch, upper.op, upper.section) == (
        "reflect", 1, 1, "add", "Output format"
    )  # fmt: skip
    assert upper.trajectory_ids == ("train-1", "train-3")
    assert upper.rationale.startswith("failures show")
    assert by_text["## Rules"].step == 3  # heading created by the add to section "Rules"
    assert by_text["- Do not explain."].step == 3
    kept = by_text["- Keep the original spelling."]
    assert (kept.step, kept.epoch, kept.op) == (6, 2, "insert_after")
    replaced = by_text["Repeat exactly the single word given by the user."]
    assert (replaced.step, replaced.op) == (4, "replace")
    assert not [b for b in lines if b.source == "unattributed"]


def test_blame_is_honest_about_unexplained_lines(run_dir: Path) -> None:
    # Someone edited version 4 by hand; versions 5, 6 and the best skill carry the line on.
    for v in (4, 5, 6):
        p = run_dir / "skills" / f"skill_v{v:04d}.md"
        p.write_text(p.read_text() + "Hand-written line.\n")
    best = run_dir / "best_skill.md"
    best.write_text(best.read_text() + "Hand-written line.\nAnother manual line.\n")
    lines = blame(run_dir)
    by_text = {b.text: b for b in lines}
    assert by_text["Hand-written line."].source == "unattributed"
    assert by_text["Hand-written line."].version == 4
    assert by_text["Another manual line."].source == "unattributed"
    assert by_text["Another manual line."].step is None


def test_blame_of_initial_only_run(tmp_path: Path) -> None:
    from fixtures_runs import build_run

    d = build_run(tmp_path, "young", n_steps=1, finished=False)
    lines = blame(d)
    assert [b.text for b in lines] == INITIAL_SKILL.splitlines()
    assert {b.source for b in lines} == {"initial"}
    (d / "skills" / "skill_v0000.md").unlink()
    with pytest.raises(RunDirError, match="initial skill"):
        blame(d)
