"""Sections agree with CommonMark (issue 11 §6): setext headings count; headings inside a
multi-line HTML comment, fenced or indented code, a block quote or a list item do not."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from skillgrad.skill.document import Skill
from skillgrad.types import Edit

CASES = [
    ("setext", "Rules\n=====\n- a\n\nDates\n-----\nISO.\n", [(1, "Rules"), (2, "Dates")]),
    ("multi-line setext", "Output\nformat\n===\nx\n", [(1, "Output format")]),
    ("comment", "# Real\n<!--\n# Hidden\nnotes\n-->\n## Sub\n", [(1, "Real"), (2, "Sub")]),
    ("fence", "# A\n```\n# not\n```\n~~~\n# no\n~~~\n# B\n", [(1, "A"), (1, "B")]),
    ("indented code", "# A\n\n    # code\n    ---\n", [(1, "A")]),
    ("lazy continuation", "# A\nsome text\n    # continued\n", [(1, "A")]),
    ("thematic break", "# A\n\n---\n\ntext\n", [(1, "A")]),
    ("paragraph then ---", "# A\ntext\n---\n", [(1, "A"), (2, "text")]),
    ("quote", "# A\n> # quoted\n> ===\n", [(1, "A")]),
    ("list item", "# A\n- item\n\n  # in the item\n", [(1, "A")]),
    ("closing hashes", "## Title ##\n#5 not\n#\n", [(2, "Title")]),
    ("html block", "<div>\n# inside\n</div>\n\n# Out\n", [(1, "Out")]),
]


@pytest.mark.parametrize(("name", "doc", "expected"), CASES, ids=[c[0] for c in CASES])
def test_sections_follow_commonmark(name: str, doc: str, expected: list[tuple[int, str]]) -> None:
    secs = Skill(doc).sections()[1:]
    assert [(s.level, s.title) for s in secs] == expected
    # the same headings a CommonMark renderer draws at top level
    html = MarkdownIt("commonmark").render(doc)
    top = re.sub(r"<(blockquote|li)>.*?</\1>", "", html, flags=re.S)
    drawn = [
        (int(m[0]), " ".join(m[1].split())) for m in re.findall(r"<h(\d)>(.*?)</h\1>", top, re.S)
    ]
    assert [d for d in drawn if d[1]] == expected  # an empty heading names no section


def test_setext_section_body_starts_after_the_underline() -> None:
    skill = Skill("Rules\n=====\n- a\n")
    [_, rules] = skill.sections()
    assert rules.body == "- a\n" and rules.content_start == 2
    after, [result] = skill.apply([Edit("add", "Rules", "- b")])
    assert result.status == "applied" and after.text == "Rules\n=====\n- a\n- b\n"


def test_markers_in_indented_code_are_text() -> None:
    doc = "# A\n\n    <!-- skillgrad:protected x -->\n"
    assert Skill(doc).protected_blocks() == {}
