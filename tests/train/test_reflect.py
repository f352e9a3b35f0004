"""Reflection: schema validation, one re-ask with the error, failed reflections recorded."""

from __future__ import annotations

from skillgrad.testing import ScriptedBackend
from skillgrad.train.reflect import ReflectConfig, reflect, trajectory_id
from skillgrad.types import Message, Score, Trajectory


def _traj(item: str, passed: bool = False) -> Trajectory:
    return Trajectory(
        item_id=item,
        skill_hash="h",
        output="apple",
        messages=(Message("user", "Word: apple"), Message("assistant", "apple")),
        score=Score(float(passed), passed, "expected 'APPLE', got 'apple'"),
        reference="APPLE",
    )


CFG = ReflectConfig(
    minibatch_size=2, max_edits=2, failure_only=True, deep_threshold=0.6, workers=2, max_tokens=200
)
GOOD = {"failure_patterns": [], "edits": [{"op": "add", "section": "Rules", "content": "Upper."}]}


async def test_valid_output_becomes_edits_with_trajectory_ids() -> None:
    opt = ScriptedBackend().expect("Scored trajectories", GOOD)
    out = await reflect(3, "", [_traj("a"), _traj("b")], opt, CFG)
    opt.assert_done()
    assert [e.content for e in out.edits] == ["Upper."]
    assert out.edits[0].trajectory_ids == (trajectory_id(3, "a"), trajectory_id(3, "b"))
    assert out.failed_calls == 0


async def test_malformed_output_is_reasked_once_with_the_error() -> None:
    opt = (
        ScriptedBackend()
        .expect("Scored trajectories", '{"edits": [{"op": "rewrite"}]}')
        .expect(lambda r: "Your reply is invalid" in r.messages[-1].content, GOOD)
    )
    out = await reflect(1, "", [_traj("a")], opt, CFG)
    opt.assert_done()
    assert "op" in opt.calls[1].messages[-1].content  # the validation error is shown
    assert out.records[0]["reasked"] and out.records[0]["ok"]
    assert len(out.edits) == 1


async def test_still_malformed_output_is_recorded_as_failed_not_replaced() -> None:
    opt = (
        ScriptedBackend()
        .expect("Scored trajectories", "I think you should add a rule.")
        .expect("Your reply is invalid", "{broken json")
    )
    out = await reflect(1, "", [_traj("a")], opt, CFG)
    opt.assert_done()
    assert out.edits == []
    rec = out.records[0]
    assert rec["ok"] is False and "not valid JSON" in rec["error"]
    assert rec["raw"] == ["I think you should add a rule.", "{broken json"]
    assert out.failed_calls == 1


async def test_a_reply_without_any_edit_is_invalid() -> None:
    opt = (
        ScriptedBackend()
        .expect("Scored trajectories", {"edits": []})
        .expect("Your reply is invalid", {"edits": []})
    )
    out = await reflect(1, "", [_traj("a")], opt, CFG)
    assert out.failed_calls == 1 and "edits" in out.records[0]["error"]


async def test_successes_are_skipped_in_failure_only_mode() -> None:
    out = await reflect(1, "", [_traj("a", passed=True)], ScriptedBackend(), CFG)
    assert out.calls == 0 and out.edits == []


async def test_deep_mode_runs_when_one_pattern_dominates() -> None:
    pattern = {"pattern": "lower case answers", "item_ids": ["a", "b", "c", "d"]}
    shallow = {
        "failure_patterns": [pattern],
        "edits": [{"op": "add", "section": "R", "content": "x"}],
    }
    deep = {"failure_patterns": [], "edits": [{"op": "add", "section": "R", "content": "Sys."}]}
    opt = (
        ScriptedBackend()
        .expect("Scored trajectories", shallow, times=2)
        .expect("systemic failure pattern", deep)
    )
    trajs = [_traj(x) for x in "abcd"]
    out = await reflect(2, "", trajs, opt, CFG)
    opt.assert_done()
    assert [r["mode"] for r in out.records] == ["shallow", "shallow", "deep"]
    deep_edit = out.edits[-1]
    assert deep_edit.source == "deep_reflect" and len(deep_edit.trajectory_ids) == 4
