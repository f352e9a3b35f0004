"""Contradictions inside a skill, found without comparing every pair of lines: the indexed scan
(``dedup.skill_contradictions``) against the pairwise one it replaces."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from skillgrad.train.aggregate import is_conflict
from skillgrad.train.screens.dedup import MAX_CONTRADICTIONS, skill_contradictions, skill_lines
from skillgrad.types import Edit

LEADS = ("Always", "Never", "Do not", "Please", "Avoid", "You must", "No", "")
VERBS = ("answer with", "reply in", "write", "quote", "return", "use", "give", "end with")
OBJECTS = ("the final word", "one word", "the label", "a full sentence", "the city names",
           "the date", "digits", "a JSON object", "the colours", "the colour", "it")  # fmt: skip
TAILS = ("in lower case", "in upper case", "on one line", "", "when unsure", "exactly", "!")
RULE = st.builds(
    lambda *parts: "- " + " ".join(p for p in parts if p).strip() + ".",
    st.sampled_from(LEADS),
    st.sampled_from(VERBS),
    st.sampled_from(OBJECTS),
    st.sampled_from(TAILS),
)
LINE = st.one_of(
    RULE, RULE, RULE, st.sampled_from(("", "## Format", "### Dates", "Reply: APPLE", "x"))
)


def pairwise(skill: str) -> list[tuple[str, str]]:
    """Every line against every later one (the scan the index replaced)."""
    lines = skill_lines(skill)

    def rule(x: str) -> Edit:
        return Edit(op="add", section="", content=x, source="skill")

    return [
        (a, b) for i, a in enumerate(lines) for b in lines[i + 1 :] if is_conflict(rule(a), rule(b))
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=60))
def test_the_indexed_scan_finds_the_pairs_the_pairwise_scan_finds(lines: list[str]) -> None:
    skill = "# Skill\n\n" + "\n".join(lines) + "\n"
    expected = pairwise(skill)
    if len(expected) <= MAX_CONTRADICTIONS:
        assert skill_contradictions(skill) == expected
    else:  # capped: pairs the pairwise scan also finds
        found = skill_contradictions(skill)
        assert len(found) == MAX_CONTRADICTIONS and set(found) <= set(expected)


def test_a_long_skill_is_scanned_in_bounded_time() -> None:
    rules = [
        f"- {lead} {verb} {obj} {tail}."
        for lead in ("Always", "Never")
        for verb in VERBS
        for obj in OBJECTS
        for tail in TAILS[:6]
    ]  # 1,056 lines, half of them contradicting another
    skill = "# Skill\n\n" + "\n".join(rules) + "\n"
    start = time.perf_counter()
    found = skill_contradictions(skill)
    assert time.perf_counter() - start < 10  # the pairwise scan: minutes
    assert len(found) == MAX_CONTRADICTIONS
    assert found[0] == (rules[0], rules[len(rules) // 2])
    again = time.perf_counter()
    assert skill_contradictions(skill) == found and time.perf_counter() - again < 0.01  # cached
