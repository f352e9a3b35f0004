"""The answer-leak check (train/screens/leaks.py): known answers for each rule of the module doc."""

from __future__ import annotations

import time

import pytest

from skillgrad.runs.records import Leak
from skillgrad.skill.package import SkillPackage
from skillgrad.train.screens.leaks import LeakIndex, describe, new_leaks
from skillgrad.types import Item

REVIEW = (
    "I watched this film last night and the ending completely ruined it for me, "
    "what a waste of two hours"
)
ANSWER = "The capital of that small country is a city called Luxembourg City."


def _items() -> dict[str, list[Item]]:
    return {
        "train": [
            Item("t1", REVIEW, "negative"),
            Item("t2", "apple", "APPLE"),
            Item("t3", "A quiet, gentle story about two brothers who run a farm.", "positive"),
        ],
        "val": [
            Item("v1", {"question": "Which city is the capital of Luxembourg?"}, ANSWER),
            Item("v2", ["tiger"], ["TIGER"]),
        ],
    }


@pytest.fixture(scope="module")
def index() -> LeakIndex:
    return LeakIndex.build(_items(), n=8)


def test_a_line_copying_eight_words_of_a_train_input_is_flagged(index: LeakIndex) -> None:
    skill = (
        "# Rules\nAnswer with one word.\n"
        "Example: the ending completely ruined it for me, what a waste\n"
    )
    (leak,) = index.find(skill)
    assert leak == Leak(
        "", 3, "the ending completely ruined it for me, what a waste", "t1", "train", "input"
    )


def test_case_spacing_and_punctuation_do_not_hide_a_copy(index: LeakIndex) -> None:
    (leak,) = index.find("Remember: THE ENDING -- completely   ruined it; for me (what a waste!)")
    assert leak.item_id == "t1" and leak.source == "input"
    assert leak.span == "THE ENDING -- completely   ruined it; for me (what a waste"


def test_seven_words_are_not_a_copy_and_a_paraphrase_is_not_either(index: LeakIndex) -> None:
    assert index.find("the ending completely ruined it for me") == ()  # 7 words
    assert index.find("If the reviewer says the ending ruined the film, answer negative.") == ()


def test_a_gold_reference_copied_from_a_val_item_is_flagged(index: LeakIndex) -> None:
    (leak,) = index.find(f"When asked about Luxembourg: {ANSWER.lower()}")
    assert (leak.item_id, leak.split, leak.source) == ("v1", "val", "reference")
    assert leak.span == ANSWER.lower().rstrip(".")


def test_a_label_reference_alone_is_never_flagged(index: LeakIndex) -> None:
    skill = "Answer with one word: positive or negative.\nnegative\nWrite positive when unsure."
    assert index.find(skill) == ()


def test_a_fragment_of_a_long_input_next_to_its_label_is_a_feature_rule(index: LeakIndex) -> None:
    assert index.find("'ruined it for me' means negative") == ()


def test_a_short_input_next_to_its_short_reference_is_a_lookup_entry(index: LeakIndex) -> None:
    leaks = index.find("apple -> APPLE\nFor the word tiger, the answer is TIGER.\napple alone\n")
    assert [(x.line, x.span, x.item_id, x.source) for x in leaks] == [
        (1, "apple -> APPLE", "t2", "input+reference"),
        (2, "tiger, the answer is TIGER", "v2", "input+reference"),
    ]


def test_a_short_pair_too_far_apart_is_not_flagged(index: LeakIndex) -> None:
    assert index.find("apple is a fruit that many people like to eat, APPLE") == ()


def test_text_of_the_initial_skill_is_exempt(index: LeakIndex) -> None:
    initial = "Example: the ending completely ruined it for me, what a waste\napple -> APPLE"
    skill = initial + "\nNew: a quiet, gentle story about two brothers who run a farm"
    (leak,) = index.find(skill, exempt=initial)
    assert (leak.line, leak.item_id) == (3, "t3")
    assert index.find(initial, exempt=initial) == ()


def test_boilerplate_shared_by_many_items_is_not_data() -> None:
    template = "Read the review below carefully and classify its overall sentiment."
    items = {
        "train": [Item(f"t{i}", f"{template} Review {i}: word{i}.", "positive") for i in range(8)]
    }
    index = LeakIndex.build(items, n=8)
    assert index.find(template) == ()


def test_package_files_are_checked_with_their_own_line_numbers(index: LeakIndex) -> None:
    pkg = SkillPackage.from_files(
        {
            "SKILL.md": "---\nname: demo\ndescription: Use when testing.\n---\nRules.\n",
            "references/examples.md": (
                "Examples\n\nthe ending completely ruined it for me, what a waste\n"
            ),
        }
    )
    (leak,) = index.find(pkg.bundle())
    assert (leak.file, leak.line, leak.item_id) == ("references/examples.md", 3, "t1")


def test_new_leaks_ignore_copies_the_incumbent_already_had(index: LeakIndex) -> None:
    old = index.find("apple -> APPLE")
    both = index.find(
        "Intro line\napple → APPLE\nAvoid: ruined it for me, what a waste of two hours"
    )
    assert [x.item_id for x in both] == ["t2", "t1"]
    assert [x.item_id for x in new_leaks(both, old)] == ["t1"]
    assert "line 3 copies input of t1 (train)" in describe(new_leaks(both, old))


def test_leak_records_round_trip_and_bad_ones_are_located() -> None:
    leak = Leak("SKILL.md", 4, "apple -> APPLE", "t2", "train", "input+reference")
    assert Leak.from_json(leak.to_json()) == leak
    with pytest.raises(ValueError, match="'source'"):
        Leak.from_json({**leak.to_json(), "source": "guess"})
    with pytest.raises(ValueError, match="'line'"):
        Leak.from_json({**leak.to_json(), "line": "4"})


def test_checking_is_linear_in_the_skill_not_the_data() -> None:
    items = {
        "train": [
            Item(f"t{i}", " ".join(f"w{i}x{j}" for j in range(200)), f"label {i % 3}")
            for i in range(500)
        ]
    }
    index = LeakIndex.build(items, n=8)  # 100k words indexed
    skill = "\n".join(f"Rule {i}: answer briefly and check the output format." for i in range(300))
    start = time.perf_counter()
    assert index.find(skill) == ()
    assert time.perf_counter() - start < 1.0
    (leak,) = index.find("see " + " ".join(f"w77x{j}" for j in range(10, 20)))
    assert leak.item_id == "t77"
