"""Every line earns its place: near duplicates by meaning, item-specific lines and lines
addressed to the grader are kept out of the skill."""

from __future__ import annotations

from skillgrad.train.screens.dedup import near_duplicate, screen
from skillgrad.types import Edit

SHORT = "Read the instruction carefully."
LONG = "Read the instruction carefully before answering."


def _add(text: str) -> Edit:
    return Edit(op="add", section="", content=f"- {text}")


def test_a_rule_padded_with_generic_words_is_a_duplicate_either_way() -> None:
    assert near_duplicate(LONG, [f"- {SHORT}"], 0.85) == f"- {SHORT}"
    assert near_duplicate(SHORT, [f"- {LONG}"], 0.85) == f"- {LONG}"
    out = screen([_add(LONG)], f"# Rules\n\n- {SHORT}\n", step=1, threshold=0.85)
    assert not out.kept and "already in the skill" in out.dropped[0]["reason"]
    kept_first = screen([_add(SHORT), _add(LONG)], "", step=1, threshold=0.85)
    assert [e.content for e in kept_first.kept] == [f"- {SHORT}"]


def test_a_rule_adding_a_real_instruction_is_a_different_rule() -> None:
    for other in (
        "Read the instruction carefully and count every letter.",
        "Read the instruction carefully, then list its constraints.",
        "Read the instruction twice.",
        "Answer with the word in uppercase.",
    ):
        assert near_duplicate(other, [f"- {SHORT}"], 0.85) is None, other
