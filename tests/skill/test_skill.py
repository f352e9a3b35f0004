"""Tests of the skill document: parsing, protected blocks, every edit op and its skips, tolerant
matching, token length, diff, immutability."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from skillgrad.errors import SkillError
from skillgrad.skill.document import (
    Skill,
    approx_tokens,
    parse_section_path,
    skill_hash,
    unified_diff,
)
from skillgrad.types import Edit

DOC = """\
You normalise dates.

# Rules
- Use ISO dates.
- Never guess the year.

## Dates
Write dates as YYYY-MM-DD.

```
# not a heading
```

# Output format
Answer with the date only.
"""


def apply1(text: str, edit: Edit, **kw: bool) -> tuple[str, str, str]:
    """Apply one edit; return (new text, status, reason)."""
    new, results = Skill(text).apply([edit], **kw)
    assert len(results) == 1 and results[0].edit is edit
    return new.text, results[0].status, results[0].reason


# ---- value, loading, hashing ---------------------------------------------------------------


def test_hash_is_the_task_cache_hash() -> None:
    s = Skill(DOC)
    assert s.hash == skill_hash(DOC)
    assert len(s.hash) == 16
    assert Skill(DOC + "x").hash != s.hash
    assert s == Skill(DOC) and hash(s) == hash(Skill(DOC))


def test_load_reads_utf8_drops_bom_and_normalises_newlines(tmp_path: Path) -> None:
    p = tmp_path / "skill.md"
    p.write_bytes("\ufeff# Règles\r\n- Un\r\n".encode())
    s = Skill.load(p)
    assert s.text == "# Règles\n- Un\n"
    assert [sec.path for sec in s.sections()] == [(), ("Règles",)]


def test_load_missing_file_says_which_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.md"
    with pytest.raises(SkillError, match=re.escape(str(missing))):
        Skill.load(missing)
    with pytest.raises(SkillError, match=r"is not a skill package: it has no SKILL\.md"):
        Skill.load(tmp_path)  # a directory without SKILL.md


def test_load_non_utf8_says_how_to_fix(tmp_path: Path) -> None:
    p = tmp_path / "latin1.md"
    p.write_bytes("café".encode("latin-1"))
    with pytest.raises(SkillError, match=r"not valid UTF-8 \(byte 3\); re-save it as UTF-8"):
        Skill.load(p)


def test_load_bad_markers_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "s.md"
    p.write_text("a\n<!-- skillgrad:protected g -->\nb\n", encoding="utf-8")
    with pytest.raises(SkillError, match=r"s\.md: .*opened at line 2 is never closed"):
        Skill.load(p)


def test_text_must_be_a_string() -> None:
    with pytest.raises(SkillError, match="got bytes"):
        Skill(b"# x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- skillgrad:protected a -->\nx\n", "'a' opened at line 1 is never closed"),
        ("<!-- /skillgrad:protected a -->\n", "line 1: closing marker of protected block 'a'"),
        (
            "<!-- skillgrad:protected a -->\n<!-- skillgrad:protected b -->\n",
            "line 2: .*cannot nest",
        ),
        (
            "<!-- skillgrad:protected a -->\n<!-- /skillgrad:protected b -->\n",
            "line 2: closing marker of protected block 'b'",
        ),
        (
            "<!-- skillgrad:protected a -->\n<!-- /skillgrad:protected a -->\n"
            "<!-- skillgrad:protected a -->\n<!-- /skillgrad:protected a -->\n",
            "line 3: a second protected block named 'a'",
        ),
    ],
)
def test_malformed_markers_are_rejected(text: str, message: str) -> None:
    with pytest.raises(SkillError, match=message):
        Skill(text)


def test_markers_inside_code_fences_are_text() -> None:
    s = Skill("```\n<!-- skillgrad:protected a -->\n```\n")
    assert s.protected_blocks() == {}


# ---- sections --------------------------------------------------------------------------------


def test_sections_paths_levels_ranges_and_bodies() -> None:
    secs = Skill(DOC).sections()
    assert [(s.path, s.level, s.start, s.end, s.body_end) for s in secs] == [
        ((), 0, 0, 16, 2),
        (("Rules",), 1, 2, 13, 6),
        (("Rules", "Dates"), 2, 6, 13, 13),
        (("Output format",), 1, 13, 16, 16),
    ]
    assert secs[0].body == "You normalise dates.\n"
    assert secs[1].body == "- Use ISO dates.\n- Never guess the year.\n"
    assert secs[1].title == "Rules" and secs[2].name == "Rules > Dates"
    assert "# not a heading" in secs[2].body


def test_headings_in_fences_and_non_headings_are_ignored() -> None:
    text = "~~~~\n# a\n~~~\n# b\n~~~~\n#tag\n    # indented code\n## Real ##\n```py\n# c\n"
    secs = Skill(text).sections()
    assert [s.path for s in secs] == [(), ("Real",)]  # the last fence is unclosed: opaque


def test_skipped_heading_levels_nest_under_the_nearest_parent() -> None:
    secs = Skill("# A\n### C\n## B\n# D\n").sections()
    assert [s.path for s in secs] == [(), ("A",), ("A", "C"), ("A", "B"), ("D",)]


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("Rules > Dates", ("Rules", "Dates")),
        ("Rules/Dates", ("Rules", "Dates")),
        ("## Dates", ("Dates",)),
        ("# Rules > ## Dates", ("Rules", "Dates")),
        ("  Output   format ", ("Output format",)),
        ("", ()),
        ("  ", ()),
        ("#", ()),
    ],
)
def test_parse_section_path(raw: str, path: tuple[str, ...]) -> None:
    assert parse_section_path(raw) == path


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("Rules > Dates", ("Rules", "Dates")),
        ("rules > DATES", ("Rules", "Dates")),
        ("**Rules**:", ("Rules",)),
        ("Dates", ("Rules", "Dates")),
        ("Output", ("Output format",)),
        ("Ouput format", ("Output format",)),
        ("", ()),
        ("Examples", None),
    ],
)
def test_find_section_is_tolerant(query: str, path: tuple[str, ...] | None) -> None:
    found = Skill(DOC).find_section(query)
    assert (found.path if found else None) == path


def test_find_section_by_title_needs_a_unique_title() -> None:
    s = Skill("# A\n## Notes\n# B\n## Notes\n")
    assert s.find_section("Notes") is None
    found = s.find_section("B > Notes")
    assert found is not None and found.start == 3


# ---- add -------------------------------------------------------------------------------------


def test_add_appends_to_own_body_before_subsections_gluing_list_items() -> None:
    text, status, reason = apply1(DOC, Edit("add", "Rules", "- Check the century."))
    assert (status, reason) == ("applied", "appended to section 'Rules'")
    assert "- Never guess the year.\n- Check the century.\n\n## Dates\n" in text


def test_add_paragraph_gets_a_blank_line_and_spacing_before_the_next_heading() -> None:
    text, status, _ = apply1(DOC, Edit("add", "Output format", "No explanation."))
    assert status == "applied"
    assert text.endswith("Answer with the date only.\n\nNo explanation.\n")
    text, _, _ = apply1("# A\nx\n# B\n", Edit("add", "A", "y"))
    assert text == "# A\nx\n\ny\n\n# B\n"


def test_add_to_section_without_body_and_to_root() -> None:
    text, _, _ = apply1("# A\n## B\nb\n", Edit("add", "A", "a"))
    assert text == "# A\na\n\n## B\nb\n"
    text, _, reason = apply1("# A\n", Edit("add", "", "Preamble."))
    assert (text, reason) == ("Preamble.\n\n# A\n", "appended to section (top of document)")
    assert apply1("", Edit("add", "", "Hi."))[0] == "Hi.\n"


def test_add_creates_missing_section_at_end_of_document() -> None:
    text, status, reason = apply1(DOC, Edit("add", "Examples", "- 3 Feb 2024 -> 2024-02-03"))
    assert (status, reason) == ("applied", "created section 'Examples'")
    assert text == DOC + "\n# Examples\n- 3 Feb 2024 -> 2024-02-03\n"


def test_add_creates_nested_sections_inside_the_existing_parent() -> None:
    text, status, reason = apply1(DOC, Edit("add", "Rules > Times > Zones", "Use UTC."))
    assert (status, reason) == ("applied", "created section 'Rules > Times > Zones'")
    assert "# not a heading\n```\n\n## Times\n\n### Zones\nUse UTC.\n\n# Output format\n" in text
    paths = [s.path for s in Skill(text).sections()]
    assert ("Rules", "Times", "Zones") in paths


def test_created_section_uses_the_level_of_existing_siblings() -> None:
    text, _, _ = apply1("## A\na\n", Edit("add", "B", "b"))
    assert text == "## A\na\n\n## B\nb\n"
    text, _, _ = apply1("# T\n### Deep\nx\n", Edit("add", "T > New", "n"))
    assert text.endswith("### Deep\nx\n\n### New\nn\n")


def test_add_to_a_tolerantly_matched_section_says_so() -> None:
    text, status, reason = apply1(DOC, Edit("add", "rules", "- New rule."))
    assert status == "applied"
    assert (
        reason == "appended to section 'Rules'; section 'rules' matched 'Rules' (case-insensitive)"
    )
    assert "- New rule." in Skill(text).sections()[1].body


@pytest.mark.parametrize("content", ["", "  \n\t "])
def test_add_empty_content_is_skipped(content: str) -> None:
    assert apply1(DOC, Edit("add", "Rules", content)) == (DOC, "skipped", "empty content")


@pytest.mark.parametrize("content", ["- Use ISO dates.", "-  Use ISO\n dates.", "YYYY-MM-DD."])
def test_add_already_present_is_skipped(content: str) -> None:
    assert apply1(DOC, Edit("add", "Rules", content)) == (DOC, "skipped", "already present")


# ---- replace ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("anchor", "how"),
    [
        ("Write dates as YYYY-MM-DD.", "exact"),
        ("Write  dates\nas YYYY-MM-DD.", "whitespace-normalised"),
        ("write dates as yyyy-mm-dd.", "case-insensitive"),
    ],
)
def test_replace_matching_stages(anchor: str, how: str) -> None:
    edit = Edit("replace", "Rules > Dates", "Write dates as YYYY/MM/DD.", anchor=anchor)
    text, status, reason = apply1(DOC, edit)
    assert (status, reason) == ("applied", how)
    assert text == DOC.replace("Write dates as YYYY-MM-DD.", "Write dates as YYYY/MM/DD.")


def test_replace_fuzzy_match_reports_its_ratio() -> None:
    edit = Edit("replace", "Rules", "- Never guess the century.", anchor="- Never guess teh yaer.")
    text, status, reason = apply1(DOC, edit)
    assert status == "applied"
    m = re.fullmatch(r"fuzzy (0\.\d\d)", reason)
    assert m is not None and float(m.group(1)) >= 0.85
    assert "- Never guess the century.\n" in text and "year" not in text


def test_fuzzy_matches_part_of_a_line() -> None:
    edit = Edit("replace", "Output format", "the ISO date", anchor="the dates only")
    text, status, reason = apply1(DOC, edit)
    assert (status, reason[:5]) == ("applied", "fuzzy")
    assert "Answer with the ISO date." in text


def test_replace_below_fuzzy_threshold_is_not_found() -> None:
    edit = Edit("replace", "Rules", "x", anchor="Prefer the European order of day and month.")
    assert apply1(DOC, edit) == (DOC, "skipped", "anchor not found in section 'Rules'")


def test_short_anchors_are_not_fuzzy_matched() -> None:
    edit = Edit("replace", "Rules", "x", anchor="Use ISX")
    assert apply1(DOC, edit)[1:] == ("skipped", "anchor not found in section 'Rules'")


def test_ambiguous_anchor_is_skipped() -> None:
    doc = "# A\n- Be brief.\n- Be brief.\n"
    edit = Edit("replace", "A", "- Be concise.", anchor="Be brief.")
    assert apply1(doc, edit) == (doc, "skipped", "ambiguous anchor (2 matches)")


def test_ambiguous_fuzzy_anchor_is_skipped() -> None:
    doc = "# A\n- Always answer in English.\n- Always answer in Englisch.\n"
    edit = Edit("replace", "A", "x", anchor="Always answer in Englis.")
    text, status, reason = apply1(doc, edit)
    assert (text, status, reason) == (doc, "skipped", "ambiguous anchor (2 fuzzy matches)")


def test_anchor_is_searched_in_the_section_subtree_only_first() -> None:
    doc = "# A\n- Be brief.\n## B\n- Be brief.\n# C\nx\n"
    text, status, reason = apply1(doc, Edit("replace", "A > B", "Be short.", anchor="Be brief."))
    assert (status, reason) == ("applied", "exact")
    assert text == "# A\n- Be brief.\n## B\n- Be short.\n# C\nx\n"


def test_missing_section_falls_back_to_a_unique_anchor() -> None:
    edit = Edit("replace", "Style", "Answer with the ISO date only.", anchor="the date only.")
    text, status, reason = apply1(DOC, edit)
    assert status == "applied"
    assert reason == "exact; anchor found in section 'Output format' instead of 'Style'"
    assert "Answer with the ISO date only.\n" in text


def test_anchor_in_the_wrong_existing_section_is_found_elsewhere_if_unique() -> None:
    edit = Edit("delete", "Output format", anchor="- Never guess the year.")
    text, status, reason = apply1(DOC, edit)
    assert (status, reason) == (
        "applied",
        "exact; anchor found in section 'Rules' instead of 'Output format'",
    )
    assert "guess" not in text


def test_missing_section_and_missing_anchor_lists_sections() -> None:
    edit = Edit("replace", "Style", "x", anchor="Be polite and concise always.")
    assert apply1(DOC, edit) == (
        DOC,
        "skipped",
        "section 'Style' not found (available: 'Rules', 'Rules > Dates', 'Output format')",
    )


def test_missing_section_with_ambiguous_anchor_elsewhere_is_skipped() -> None:
    doc = "# A\n- Be brief.\n# B\n- Be brief.\n"
    _, status, reason = apply1(doc, Edit("delete", "Zzz", anchor="Be brief."))
    assert status == "skipped"
    assert (
        reason
        == "section 'Zzz' not found (available: 'A', 'B'); elsewhere: ambiguous anchor (2 matches)"
    )


def test_empty_section_means_whole_document() -> None:
    edit = Edit(
        "replace", "", "Answer with the date, nothing else.", anchor="Answer with the date only."
    )
    text, status, reason = apply1(DOC, edit)
    assert (status, reason) == ("applied", "exact")
    assert text.endswith("Answer with the date, nothing else.\n")


def test_replace_with_empty_content_deletes_and_identical_content_is_skipped() -> None:
    text, status, _ = apply1(DOC, Edit("replace", "Rules", "", anchor="- Use ISO dates."))
    assert status == "applied" and "# Rules\n- Never guess the year.\n" in text
    same = Edit("replace", "Rules", "- Use ISO dates.", anchor="- Use ISO dates.")
    assert apply1(DOC, same) == (DOC, "skipped", "no change (content equals the anchor)")


@pytest.mark.parametrize("op", ["replace", "delete"])
def test_empty_anchor_is_skipped(op: str) -> None:
    assert apply1(DOC, Edit(op, "Rules", "x", anchor=" "))[1:] == ("skipped", "empty anchor")  # type: ignore[arg-type]


# ---- delete ----------------------------------------------------------------------------------


def test_delete_removes_the_line_it_empties() -> None:
    text, status, reason = apply1(DOC, Edit("delete", "Rules", anchor="Never guess the year."))
    assert (status, reason) == ("applied", "exact")
    assert "# Rules\n- Use ISO dates.\n\n## Dates\n" in text  # no bare "- " left behind


def test_delete_keeps_the_rest_of_a_line_and_never_doubles_blank_lines() -> None:
    text, _, _ = apply1(
        "a\n\nUse ISO. Never guess.\n\nb\n", Edit("delete", "", anchor="Never guess.")
    )
    assert text == "a\n\nUse ISO.\n\nb\n"
    text, _, _ = apply1("a\n\nonly\n\nb\n", Edit("delete", "", anchor="only"))
    assert text == "a\n\nb\n"
    text, _, _ = apply1("first\n\n# A\n", Edit("delete", "", anchor="first"))
    assert text == "# A\n"
    text, _, _ = apply1("a\nlast", Edit("delete", "", anchor="last"))
    assert text == "a"


def test_delete_anchor_not_found() -> None:
    edit = Edit("delete", "Rules", anchor="Always reply in French.")
    assert apply1(DOC, edit) == (DOC, "skipped", "anchor not found in section 'Rules'")


# ---- insert_after --------------------------------------------------------------------------


def test_insert_after_the_line_where_the_anchor_ends() -> None:
    edit = Edit(
        "insert_after", "Rules", "- Two-digit years are 20xx.", anchor="Use ISO dates.\n- Never"
    )
    text, status, reason = apply1(DOC, edit)
    assert (status, reason) == ("applied", "exact")
    assert "- Never guess the year.\n- Two-digit years are 20xx.\n\n## Dates" in text


def test_insert_after_last_line_without_newline() -> None:
    text, status, _ = apply1("# A\nx", Edit("insert_after", "A", "y", anchor="x"))
    assert (text, status) == ("# A\nx\ny", "applied")


def test_insert_after_without_anchor_behaves_as_add() -> None:
    text, status, reason = apply1(DOC, Edit("insert_after", "Rules", "- Be strict."))
    assert (status, reason) == ("applied", "appended to section 'Rules' (no anchor: added)")
    assert "- Never guess the year.\n- Be strict.\n" in text


def test_insert_after_skips_empty_content_and_already_present() -> None:
    empty = Edit("insert_after", "Rules", " ", anchor="Use ISO dates.")
    assert apply1(DOC, empty) == (DOC, "skipped", "empty content")
    dup = Edit("insert_after", "Rules", "- Never guess the year.", anchor="Use ISO dates.")
    assert apply1(DOC, dup) == (DOC, "skipped", "already present")


# ---- bad edits never raise -------------------------------------------------------------------


def test_unknown_op_and_non_text_fields_are_skipped() -> None:
    bad_op = Edit("rewrite", "Rules", "x")  # type: ignore[arg-type]
    assert apply1(DOC, bad_op)[1:] == (
        "skipped",
        "unknown op 'rewrite' (expected one of: add, replace, delete, insert_after)",
    )
    none_content = Edit("add", "Rules", None)  # type: ignore[arg-type]
    _, status, reason = apply1(DOC, none_content)
    assert status == "skipped" and reason.startswith("invalid edit: content must be text")


def test_edits_apply_in_order_and_inputs_are_not_mutated() -> None:
    original = Skill(DOC)
    edits = [
        Edit("replace", "Rules", "- Use ISO-8601 dates.", anchor="- Use ISO dates."),
        Edit("replace", "Rules", "- Always use ISO-8601 dates.", anchor="- Use ISO-8601 dates."),
        Edit("delete", "Rules", anchor="- Use ISO dates."),
    ]
    snapshot = list(edits)
    new, results = original.apply(edits)
    assert [r.status for r in results] == ["applied", "applied", "skipped"]
    assert [r.edit for r in results] == snapshot and edits == snapshot
    assert original.text == DOC and original.hash == skill_hash(DOC)
    assert "- Always use ISO-8601 dates.\n" in new.text
    assert original.apply([]) == (original, [])


def test_random_edits_never_raise_and_never_touch_protected_text() -> None:
    base = Skill(DOC).with_protected_block("g", "- Keep ISO dates.\n- Keep the year.")
    words = ["Rules", "Dates", "ISO", "year", "- ", "\n", "Output", "date", "#", ">", "  ", "é"]
    rng = random.Random(1234)
    ops = ["add", "replace", "delete", "insert_after", "bogus"]

    def phrase() -> str:
        return "".join(rng.choice(words) + rng.choice(["", " "]) for _ in range(rng.randint(0, 6)))

    seen: set[str] = set()
    for _ in range(300):
        edits = [Edit(rng.choice(ops), phrase(), phrase(), anchor=phrase()) for _ in range(3)]  # type: ignore[arg-type]
        new, results = base.apply(edits)
        assert len(results) == 3
        assert all(r.status in ("applied", "skipped") and r.reason for r in results)
        assert new.protected_blocks() == base.protected_blocks()
        seen.update(r.status for r in results)
    assert seen == {"applied", "skipped"}


# ---- protected blocks ------------------------------------------------------------------------

PROTECTED = """\
# Rules
- Use ISO dates.

# Guidance
Before.
<!-- skillgrad:protected slow -->
- Keep the ISO rule: it fixed 4 items.
## Inside
- Never drop the century.
<!-- /skillgrad:protected slow -->
"""


def test_protected_blocks_content() -> None:
    s = Skill(PROTECTED)
    assert s.protected_blocks() == {
        "slow": "- Keep the ISO rule: it fixed 4 items.\n## Inside\n- Never drop the century."
    }


@pytest.mark.parametrize(
    "edit",
    [
        Edit("replace", "Guidance", "x", anchor="- Keep the ISO rule: it fixed 4 items."),
        Edit("delete", "Guidance > Inside", anchor="Never drop the century."),
        Edit("replace", "", "x", anchor="Keep the ISO rul: it fixed 4 item."),  # fuzzy
        Edit("insert_after", "Guidance", "- New.", anchor="it fixed 4 items."),
        Edit("add", "Guidance", "- New."),  # own body ends inside the block
        Edit("delete", "", anchor="<!-- /skillgrad:protected slow -->"),
    ],
)
def test_normal_edits_cannot_touch_protected_blocks(edit: Edit) -> None:
    assert apply1(PROTECTED, edit) == (PROTECTED, "skipped", "protected block slow")


def test_add_after_a_block_that_ends_the_section_is_allowed() -> None:
    text, status, reason = apply1(PROTECTED, Edit("add", "Guidance > Inside", "- New."))
    assert (status, reason) == ("applied", "appended to section 'Guidance > Inside'")
    assert text == PROTECTED + "\n- New.\n"
    assert Skill(text).protected_blocks() == Skill(PROTECTED).protected_blocks()


def test_edit_content_with_markers_is_rejected() -> None:
    edit = Edit("add", "Rules", "<!-- /skillgrad:protected slow -->\n- x")
    _, status, reason = apply1(PROTECTED, edit)
    assert status == "skipped" and reason.startswith("content contains protected-block markers")
    slow = Edit("add", "Rules", "<!-- skillgrad:protected other -->", source="slow_update")
    assert apply1(PROTECTED, slow)[1] == "skipped"


def test_anchor_outside_protected_block_is_still_unique() -> None:
    doc = PROTECTED.replace("Before.", "- Never drop the century.")
    edit = Edit("delete", "Guidance", anchor="- Never drop the century.")
    text, status, reason = apply1(doc, edit)
    assert (status, reason) == ("applied", "exact")
    assert Skill(text).protected_blocks() == Skill(doc).protected_blocks()
    assert "# Guidance\n<!-- skillgrad:protected slow -->" in text


@pytest.mark.parametrize("via", ["source", "flag"])
def test_slow_update_can_change_protected_blocks(via: str) -> None:
    source = "slow_update" if via == "source" else "reflect"
    edit = Edit("replace", "Guidance", "fixed 5 items", anchor="fixed 4 items", source=source)
    text, status, reason = apply1(PROTECTED, edit, allow_protected=via == "flag")
    assert (status, reason) == ("applied", "exact")
    assert (
        Skill(text).protected_blocks()["slow"].startswith("- Keep the ISO rule: it fixed 5 items.")
    )


def test_slow_update_cannot_break_the_markers() -> None:
    edit = Edit("delete", "", anchor="<!-- /skillgrad:protected slow -->", source="slow_update")
    text, status, reason = apply1(PROTECTED, edit)
    assert (text, status) == (PROTECTED, "skipped")
    assert reason.startswith("would break protected-block markers (protected block 'slow'")


def test_with_protected_block_creates_section_and_block_at_the_end() -> None:
    s = Skill(DOC).with_protected_block("slow", "- Keep ISO dates.\n")
    assert s.text == DOC + (
        "\n# Longitudinal guidance\n<!-- skillgrad:protected slow -->\n- Keep ISO dates.\n"
        "<!-- /skillgrad:protected slow -->\n"
    )
    assert s.protected_blocks() == {"slow": "- Keep ISO dates."}


def test_with_protected_block_in_an_existing_section_then_replace_in_place() -> None:
    s = Skill(DOC).with_protected_block("slow", "v1", section="Rules")
    assert "- Never guess the year.\n\n<!-- skillgrad:protected slow -->\nv1\n" in s.text
    assert s.find_section("Rules > Dates") is not None
    s2 = s.with_protected_block("slow", "v2\n<!-- skillgrad:protected evil -->\nmore")
    assert s2.protected_blocks() == {"slow": "v2\nmore"}
    assert s2.text == s.text.replace("\nv1\n", "\nv2\nmore\n")
    assert len(re.findall("skillgrad:protected", s2.text)) == 2  # no stray markers
    s3 = s2.with_protected_block("other", "")
    assert s3.protected_blocks() == {"slow": "v2\nmore", "other": ""}
    assert len(re.findall("skillgrad:protected", s3.text)) == 4


def test_with_protected_block_rejects_bad_names() -> None:
    with pytest.raises(SkillError, match="bad protected block name 'a b'"):
        Skill(DOC).with_protected_block("a b", "x")


def test_deployable_text_keeps_markers_so_it_matches_what_the_gate_scored() -> None:
    s = Skill(PROTECTED)
    assert s.deployable_text() == s.text == PROTECTED


# ---- length and diff -------------------------------------------------------------------------


def test_token_length_fallback_and_counter() -> None:
    assert approx_tokens("Use ISO-8601 dates, always!") == 8
    assert approx_tokens("") == 0
    s = Skill("Use ISO-8601 dates.")
    assert s.token_length() == 6
    assert s.token_length(len) == len("Use ISO-8601 dates.")
    assert s.token_length(lambda t: len(t.split())) == 3


def test_unified_diff_and_skill_diff() -> None:
    a, b = "x\ny\n", "x\nz\n"
    assert unified_diff(a, b, "old", "new") == "--- old\n+++ new\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n"
    assert unified_diff(a, a) == ""
    assert unified_diff("x", "y") == (
        "--- a\n+++ b\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n"
        "+y\n\\ No newline at end of file\n"
    )
    assert Skill(a).diff(Skill(b)).startswith("--- before\n+++ after\n")
