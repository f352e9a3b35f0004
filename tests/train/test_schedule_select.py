"""Learning-rate schedules, rejection decay and top-k selection (gradient clipping)."""

from __future__ import annotations

import math

import pytest

from skillgrad.testing import ScriptedBackend
from skillgrad.train.select import (
    Schedule,
    clip_edit,
    edits_allowed,
    effective_lr,
    evidence,
    select,
)
from skillgrad.types import Edit


def test_constant_schedule_is_flat() -> None:
    s = Schedule("constant", 8, 1, total_steps=10)
    assert [s.at(t) for t in range(1, 11)] == [8] * 10


def test_linear_schedule_goes_from_max_to_min() -> None:
    s = Schedule("linear", 9, 1, total_steps=5)
    assert [s.at(t) for t in range(1, 6)] == pytest.approx([9, 7, 5, 3, 1])


def test_cosine_schedule_matches_formula() -> None:
    s = Schedule("cosine", 8, 2, total_steps=5)
    expected = [2 + 6 * 0.5 * (1 + math.cos(math.pi * i / 4)) for i in range(5)]
    assert [s.at(t) for t in range(1, 6)] == pytest.approx(expected)
    assert s.at(1) == 8 and s.at(5) == pytest.approx(2)


def test_warmup_ramps_up_then_follows_schedule() -> None:
    s = Schedule("cosine", 8, 1, total_steps=10, warmup_steps=4)
    assert [s.at(t) for t in (1, 2, 3, 4)] == pytest.approx([2, 4, 6, 8])
    assert s.at(5) == pytest.approx(8)
    assert s.at(10) == pytest.approx(1)


def test_unknown_schedule_is_refused() -> None:
    with pytest.raises(ValueError, match="constant \\| linear \\| cosine"):
        Schedule("exponential", 4, 1, 10)


def test_rejection_decay_multiplies_and_is_floored() -> None:
    s = Schedule("constant", 8, 2, total_steps=10)
    assert effective_lr(s, 1, 0.5, 0) == 8
    assert effective_lr(s, 1, 0.5, 1) == 4
    assert effective_lr(s, 1, 0.5, 2) == 2
    assert effective_lr(s, 1, 0.5, 5) == 2  # floor
    assert edits_allowed(0.3) == 1 and edits_allowed(2.6) == 3


def _edit(content: str, support: int = 1) -> Edit:
    return Edit("add", "Rules", content, support=support)


async def test_select_keeps_top_k_by_support_without_ranking_call() -> None:
    edits = [_edit("a", 1), _edit("b", 3), _edit("c", 2)]
    sel = await select(edits, 2, max_edit_tokens=50, skill="")
    assert [e.content for e in sel.selected] == ["b", "c"]
    assert [d["reason"] for d in sel.dropped] == ["below top-2"]
    assert sel.ranking is None


async def test_select_asks_optimizer_to_rank_only_when_pool_exceeds_k() -> None:
    opt = ScriptedBackend().expect("Order the proposed changes", {"order": [2, 0, 1]})
    edits = [_edit("a"), _edit("b"), _edit("c")]
    sel = await select(edits, 2, max_edit_tokens=50, skill="", optimizer=opt)
    assert [e.content for e in sel.selected] == ["c", "a"]
    opt.assert_done()
    # pool == k: no call at all (the strict fake would fail on one)
    sel = await select(edits[:2], 2, max_edit_tokens=50, skill="", optimizer=ScriptedBackend())
    assert len(sel.selected) == 2


async def test_a_rule_drawn_from_more_failures_outranks_the_optimizers_order() -> None:
    # the 1.5B answers the ranking with the order shown; the rule six failures share must win
    one = [Edit("add", "", f"- Call f{i}.", trajectory_ids=("s/a", "s/b")) for i in range(2)]
    shared = Edit("add", "", "- Call none.", trajectory_ids=tuple(f"s/{n}" for n in "abcdef"))
    opt = ScriptedBackend().expect("Order the proposed changes", {"order": [0, 1, 2]})
    sel = await select([*one, shared], 1, max_edit_tokens=50, skill="", optimizer=opt)
    assert [e.content for e in sel.selected] == ["- Call none."]
    assert evidence(shared) == 6 and evidence(Edit("add", "", "x", trajectory_ids=("a", "a"))) == 1
    # support still comes first: two proposals agreeing beat one drawn from more failures
    agreed = Edit("add", "", "- Call g.", support=2, trajectory_ids=("s/a",))
    sel = await select([shared, agreed], 1, max_edit_tokens=50, skill="")
    assert [e.content for e in sel.selected] == ["- Call g."]


async def test_an_edit_rejected_before_comes_after_new_ones_whatever_its_support() -> None:
    old, new = _edit("- Be brief.", 3), _edit("Answer in one word.", 1)
    rejected = [Edit("add", "", "be brief.")]
    sel = await select([old, new], 1, max_edit_tokens=50, skill="", rejected=rejected)
    assert [e.content for e in sel.selected] == ["Answer in one word."]
    assert sel.dropped[0]["reason"] == "below top-1 (rejected before)"


async def test_the_ranking_prompt_shows_the_graders_feedback_and_each_change() -> None:
    opt = ScriptedBackend().expect("Order the proposed changes", {"order": [1, 0]})
    edits = [_edit("- Be brief.", 1), Edit("replace", "", "Use ISO dates.", anchor="Use dates.")]
    await select(edits, 1, max_edit_tokens=50, skill="x", optimizer=opt, feedback="- late (2)")
    prompt = opt.calls[0].messages[-1].content
    assert "- late (2)" in prompt
    assert "[0] '- Be brief.' (proposed 1 times)" in prompt
    assert "[1] 'Use dates.' -> 'Use ISO dates.'" in prompt


async def test_failed_ranking_is_recorded_not_hidden() -> None:
    opt = ScriptedBackend().expect("Order the", "not json").expect("invalid", "still not json")
    sel = await select([_edit("a"), _edit("b")], 1, max_edit_tokens=50, skill="", optimizer=opt)
    assert sel.ranking is not None and sel.ranking["ok"] is False
    assert "fallback" in sel.ranking
    assert [e.content for e in sel.selected] == ["a"]


def test_clip_edit_keeps_whole_lines_or_drops() -> None:
    long = "short rule\n" + "word " * 50

    def count(text: str) -> int:
        return len(text.split())

    clipped = clip_edit(_edit(long), 5, count)
    assert clipped is not None and clipped.content == "short rule"
    assert clip_edit(_edit("word " * 50), 5, count) is None


async def test_oversized_edit_is_dropped_with_reason() -> None:
    sel = await select([_edit("x " * 300)], 3, max_edit_tokens=10, skill="")
    assert sel.selected == [] and "exceeds 10 tokens" in sel.dropped[0]["reason"]


def test_batches_cover_the_epoch_without_repeats() -> None:
    from skillgrad.testing import ToyTask
    from skillgrad.train.step import sample_batch

    items = ToyTask(n_train=10).load_split("train")
    batches = [sample_batch(items, 0, 1, i, 4) for i in range(3)]
    assert all(len(b) == 4 and len({x.id for x in b}) == 4 for b in batches)
    assert {x.id for b in batches[:2] for x in b} | {x.id for x in batches[2]} == {
        i.id for i in items
    }
    assert sample_batch(items, 0, 1, 0, 4) == batches[0]  # seeded
    assert sample_batch(items, 0, 2, 0, 4) != batches[0]  # reshuffled per epoch
    assert len(sample_batch(items[:3], 0, 1, 0, 8)) == 3  # never larger than the split


async def test_a_rule_the_skill_already_has_is_dropped_before_ranking() -> None:
    edits = [_edit("- Answer in one word", 5), _edit("Use upper case.", 1)]
    sel = await select(edits, 2, max_edit_tokens=50, skill="# R\n\n- Answer in one word.\n")
    assert [e.content for e in sel.selected] == ["Use upper case."]
    assert sel.dropped == [
        {"edit": edits[0], "reason": "already in the skill: '- Answer in one word.'"}
    ]
    assert sel.repeated == ["- Answer in one word."]
