"""Aggregation and conflicts (the gate's tests are in test_gate.py)."""

from __future__ import annotations

from skillgrad.runs.records import Conflict
from skillgrad.train.aggregate import aggregate, is_conflict
from skillgrad.types import Edit


def test_aggregate_merges_near_duplicates_with_support_and_ids() -> None:
    a = Edit("add", "Output format", "Answer in upper case.", trajectory_ids=("s/1", "s/2"))
    b = Edit("add", "output format", "Answer in upper case!", trajectory_ids=("s/2", "s/3"))
    c = Edit("add", "Output format", "Keep answers short.", trajectory_ids=("s/4",))
    out = aggregate([a, b, c], threshold=0.85, step=1)
    assert len(out.edits) == 2
    # support counts the proposals merged (two reflection calls agreed), ids are united
    assert out.edits[0].support == 2 and out.edits[0].trajectory_ids == ("s/1", "s/2", "s/3")
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
