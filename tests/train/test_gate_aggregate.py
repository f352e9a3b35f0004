"""The gate's decision and its lossless early rejection; aggregation and conflicts."""

from __future__ import annotations

import itertools

import pytest

from skillgrad.testing import FunctionBackend, ToyTask, system_text, user_text
from skillgrad.train.aggregate import aggregate, is_conflict
from skillgrad.train.gate import can_still_win, decide, gate
from skillgrad.types import ChatRequest, Conflict, Edit


def test_strict_improvement_required() -> None:
    assert decide(3.0, 2.0)
    assert not decide(2.0, 2.0)
    assert not decide(1.5, 2.0)


@pytest.mark.parametrize("scores", list(itertools.product([0.0, 0.5, 1.0], repeat=5)))
def test_early_rejection_is_lossless(scores: tuple[float, ...]) -> None:
    """Whenever the early check rejects, the full evaluation would have rejected too."""
    incumbent_sum = 2.5
    total = len(scores)
    full_decision = decide(sum(scores), incumbent_sum)
    for n in range(1, total):
        if not can_still_win(sum(scores[:n]), total - n, incumbent_sum):
            assert not full_decision


def _answers_from(skill_answers: dict[str, set[str]]) -> FunctionBackend:
    """Target that passes an item only if the skill's marker lists the item's word."""

    def reply(request: ChatRequest) -> str:
        word = user_text(request).removeprefix("Word: ")
        good = skill_answers.get(system_text(request), set())
        return word.upper() if word in good else word

    return FunctionBackend(reply)


async def test_gate_stops_early_and_decides_like_a_full_evaluation() -> None:
    task = ToyTask(n_val=8)
    items = task.load_split("val")
    words = [i.input for i in items]
    # candidate passes only the last item: after the first chunks it cannot beat 0.5
    target = _answers_from({"cand": {words[-1]}})
    early = await gate(task, items, "cand", 0.5, target, chunk=2, early_stop=True)
    full = await gate(
        task, items, "cand", 0.5, _answers_from({"cand": {words[-1]}}), chunk=2, early_stop=False
    )
    assert early.result.early_rejected and early.result.evaluated < len(items)
    assert early.result.accepted == full.result.accepted is False
    assert full.result.evaluated == len(items)


async def test_gate_accepts_strict_improvement() -> None:
    task = ToyTask(n_val=4)
    items = task.load_split("val")
    target = _answers_from({"cand": {i.input for i in items[:3]}})
    out = await gate(task, items, "cand", 0.5, target, chunk=4)
    assert out.result.accepted and out.result.candidate_score == 0.75


def test_aggregate_merges_near_duplicates_with_support_and_ids() -> None:
    a = Edit("add", "Output format", "Answer in upper case.", trajectory_ids=("s/1", "s/2"))
    b = Edit("add", "output format", "Answer in upper case!", trajectory_ids=("s/2", "s/3"))
    c = Edit("add", "Output format", "Keep answers short.", trajectory_ids=("s/4",))
    out = aggregate([a, b, c], threshold=0.85, step=1)
    assert len(out.edits) == 2
    assert out.edits[0].support == 3 and out.edits[0].trajectory_ids == ("s/1", "s/2", "s/3")
    assert out.edits[1].support == 1
    assert out.conflicts == []


def test_conflicting_edits_are_held_back() -> None:
    yes = Edit("add", "Style", "Use bullet points in answers.")
    no = Edit("add", "Style", "Do not use bullet points in answers.")
    other = Edit("add", "Style", "Be brief.")
    out = aggregate([yes, no, other], threshold=0.85, step=3)
    assert [e.content for e in out.edits] == ["Be brief."]
    assert out.conflicts == [Conflict(3, (yes, no), "opposite changes")]


def test_replace_vs_delete_of_same_anchor_conflict() -> None:
    r = Edit("replace", "Rules", "Use ISO dates.", anchor="Use US dates.")
    d = Edit("delete", "Rules", anchor="Use US dates.")
    assert is_conflict(r, d)
    assert not is_conflict(r, Edit("replace", "Other", "x", anchor="Use US dates."))


async def test_min_delta_raises_the_bar() -> None:
    task = ToyTask(n_val=4)
    items = task.load_split("val")

    def target() -> FunctionBackend:
        return _answers_from({"cand": {i.input for i in items[:3]}})  # candidate scores 0.75

    assert (await gate(task, items, "cand", 0.5, target(), chunk=4, min_delta=0.2)).result.accepted
    high = await gate(task, items, "cand", 0.5, target(), chunk=1, min_delta=0.3)
    assert not high.result.accepted
    full = await gate(task, items, "cand", 0.5, target(), chunk=1, min_delta=0.3, early_stop=False)
    assert not full.result.accepted  # early stop (if any) agreed with the full evaluation
