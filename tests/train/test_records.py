"""Typed records between phases: StepRecord, RejectedEdit, Conflict and TrainState round-trip
through JSON exactly; damaged records are clear errors naming the field."""

from __future__ import annotations

import json

import pytest

from skillgrad.runs.records import CheckResult, Conflict, GateResult, RejectedEdit, StepRecord
from skillgrad.train.state import StepOutcome, TrainState, advance
from skillgrad.types import Edit, EditResult

EDIT = Edit("add", "Rules", "- Never guess.", rationale="fails", trajectory_ids=("step_0001/a",))


def _outcome(accepted: bool) -> StepOutcome:
    gate = GateResult(accepted, 0.5, 0.75 if accepted else 0.25, 4, 4, False, "why")
    return StepOutcome(
        kind="step",
        lr=2.0,
        k=2,
        candidate="# new",
        gate=gate,
        applied=(EditResult(EDIT, "applied"),),
        proposed=3,
        conflicts=(Conflict(1, (EDIT, EDIT), "opposite changes"),),
        usage={
            "calls": {"optimizer": 2},
            "tokens": {"optimizer": 9},
            "cost": {"optimizer": 0.1},
            "cum_calls": 7,
            "cum_cost": 0.3,
        },
        timings={"gate": 1.23456},
    )


def test_advance_builds_typed_records_that_round_trip_through_json() -> None:
    state = TrainState(skill="# old", current_score=0.5, best_score=0.5)
    state = advance(state, _outcome(False), patience=5, buffer_size=3)
    state = advance(state, _outcome(True), patience=5, buffer_size=3)
    first, second = state.history
    assert first.verdict == "rejected" and second.verdict == "accepted"
    assert second.cum_calls == 7 and second.timings == {"gate": 1.235}
    assert state.rejected_buffer == (RejectedEdit(1, (EDIT,), 0.5, 0.25),)
    assert [c.step for c in state.conflicts] == [1, 1]
    text = json.dumps(state.to_json())  # what runtime_state.json holds
    again = TrainState.from_json(json.loads(text))
    assert again == state
    assert json.loads(text)["history"][1]["accepted"] is True  # the history.json keys


def test_step_record_json_keeps_the_history_file_format() -> None:
    rec = StepRecord(step=1, epoch=1, kind="step", candidate_score=None, calls={"target": 3})
    data = rec.to_json()
    assert list(data)[:3] == ["step", "epoch", "kind"] and data["candidate_score"] is None
    assert StepRecord.from_json(data) == rec


REFUSED = CheckResult(
    "llamacpp:smollm2-135m", "refused", 1.0, 0.95, -0.05, 20, 20, False, 0,
    "refused: loses 0.050 on llamacpp:smollm2-135m",
).__dict__  # fmt: skip


def test_check_target_records_round_trip_and_name_the_verdict() -> None:
    rec = StepRecord(
        step=3,
        epoch=1,
        kind="step",
        gate_evaluated=20,
        check_targets=(CheckResult.from_json(REFUSED),),
    )
    again = StepRecord.from_json(json.loads(json.dumps(rec.to_json())))
    assert again == rec
    assert rec.verdict == "refused: loses 0.050 on llamacpp:smollm2-135m"
    # a record of the version with several candidates per step (a "candidates" list) loads
    kept = {"k": 2, "seed": 99, "verdict": "kept", "kept": True}
    old = StepRecord.from_json({"step": 1, "epoch": 1, "kind": "step", "candidates": [kept]})
    assert old == StepRecord(step=1, epoch=1, kind="step")


def test_old_records_without_newer_fields_still_load() -> None:
    rec = StepRecord.from_json({"step": 2, "epoch": 1, "kind": "slow_update", "accepted": True})
    assert rec.kind == "slow_update" and rec.gate_reason == "" and rec.no_gate is False


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"epoch": 1, "kind": "step"}, "required field 'step' is missing"),
        ({"step": 1, "epoch": 1, "kind": "epoch"}, "field 'kind'"),
        ({"step": 1, "epoch": 1, "kind": "step", "accepted": "yes"}, "field 'accepted'"),
        ({"step": 1, "epoch": 1, "kind": "step", "val_score": None}, "field 'val_score'"),
        ({"step": 1.5, "epoch": 1, "kind": "step"}, "field 'step': expected int"),
        ({"step": 1, "epoch": 1, "kind": "step", "cost": {"target": "x"}}, "'cost.target'"),
        ([1, 2], "expected a JSON object"),
        ({"step": 1, "epoch": 1, "kind": "step", "check_targets": {}}, "'check_targets'"),
        (
            {"step": 1, "epoch": 1, "kind": "step", "check_targets": [{"target": "x"}]},
            "check-target record: required field 'verdict'",
        ),
        (
            {"step": 1, "epoch": 1, "kind": "step", "check_targets": [REFUSED | {"verdict": "?"}]},
            "check-target record field 'verdict'",
        ),
    ],
)
def test_damaged_step_records_name_the_field(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StepRecord.from_json(data)


def test_damaged_buffer_and_conflict_entries_are_errors() -> None:
    with pytest.raises(ValueError, match="rejected-edit entry: required field 'incumbent'"):
        RejectedEdit.from_json({"step": 1, "edits": [], "candidate": 0.1})
    with pytest.raises(ValueError, match="conflict entry: an edit has no 'op'"):
        Conflict.from_json({"step": 1, "edits": [{"section": "x"}], "reason": "r"})
    with pytest.raises(ValueError, match="runtime state: 'history' is not a list"):
        TrainState.from_json({"history": {"step": 1}})
