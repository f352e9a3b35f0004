"""Reflection: rules first, schema validation, one re-ask with the error, failed reflections
recorded, deep mode chosen from the scorer's feedback (no model call decides it)."""

from __future__ import annotations

import json

from skillgrad.models.structured import request_schema
from skillgrad.testing import ScriptedBackend, rules_reply
from skillgrad.train.reflect import (
    ReflectConfig,
    dominant_pattern,
    feedback_batches,
    feedback_key,
    reflect,
    trajectory_id,
)
from skillgrad.types import ChatRequest, Message, Score, Trajectory


def _traj(item: str, passed: bool = False, feedback: str = "") -> Trajectory:
    return Trajectory(
        item_id=item,
        skill_hash="h",
        output="apple",
        messages=(Message("user", "Word: apple"), Message("assistant", "apple")),
        score=Score(float(passed), passed, feedback or f"expected '{item.upper()}', got 'apple'"),
        reference="APPLE",
    )


CFG = ReflectConfig(
    minibatch_size=2, max_edits=2, failure_only=True, deep_threshold=0.6, workers=2, max_tokens=200
)
GOOD = rules_reply("Answer in upper case.")
REFLECT = "## Failed tasks"


async def test_valid_output_becomes_edits_with_trajectory_ids() -> None:
    opt = ScriptedBackend().expect(REFLECT, GOOD)
    out = await reflect(3, "", [_traj("a"), _traj("b")], opt, CFG)
    opt.assert_done()
    assert [(e.op, e.section, e.content) for e in out.edits] == [
        ("add", "", "- Answer in upper case.")
    ]
    assert out.edits[0].trajectory_ids == (trajectory_id(3, "a"), trajectory_id(3, "b"))
    assert out.failed_calls == 0


async def test_malformed_output_is_reasked_once_with_the_error() -> None:
    opt = (
        ScriptedBackend()
        .expect(REFLECT, '{"rules": [{"replaces": "x"}]}')
        .expect(lambda r: "Your reply is invalid" in r.messages[-1].content, GOOD)
    )
    out = await reflect(1, "", [_traj("a")], opt, CFG)
    opt.assert_done()
    assert "rule" in opt.calls[1].messages[-1].content  # the validation error is shown
    assert out.records[0]["reasked"] and out.records[0]["ok"]
    assert len(out.edits) == 1


async def test_still_malformed_output_is_recorded_as_failed_not_replaced() -> None:
    opt = (
        ScriptedBackend()
        .expect(REFLECT, "I think you should add a rule.")
        .expect("Your reply is invalid", "{broken json")
    )
    out = await reflect(1, "", [_traj("a")], opt, CFG)
    opt.assert_done()
    assert out.edits == []
    rec = out.records[0]
    assert rec["ok"] is False and "not valid JSON" in rec["error"]
    assert rec["raw"] == ["I think you should add a rule.", "{broken json"]
    assert out.failed_calls == 1


async def test_a_reply_without_any_rule_is_invalid() -> None:
    opt = (
        ScriptedBackend()
        .expect(REFLECT, {"rules": []})
        .expect("Your reply is invalid", {"rules": []})
    )
    out = await reflect(1, "", [_traj("a")], opt, CFG)
    assert out.failed_calls == 1 and "rules" in out.records[0]["error"]


async def test_successes_are_skipped_in_failure_only_mode() -> None:
    out = await reflect(1, "", [_traj("a", passed=True)], ScriptedBackend(), CFG)
    assert out.calls == 0 and out.edits == []


def _schema_of(request: ChatRequest) -> dict[str, object]:
    assert request.response_schema is not None
    return request.response_schema


async def test_an_empty_skill_offers_no_anchor_and_no_heading() -> None:
    opt = ScriptedBackend().expect(REFLECT, GOOD)
    await reflect(1, "", [_traj("a")], opt, CFG)
    rule = _schema_of(opt.calls[0])["$defs"]["Rule"]  # type: ignore[index]
    assert set(rule["properties"]) == {"rule"}
    prompt = opt.calls[0].messages[-1].content
    assert "replaces" not in prompt and "(empty" in prompt


async def test_the_skills_real_lines_and_headings_are_the_only_choices() -> None:
    skill = "# Format\n\n- Answer in one word.\n\n## Case\n\nUse lower case.\n"
    opt = ScriptedBackend().expect(REFLECT, GOOD)
    await reflect(1, skill, [_traj("a")], opt, CFG)
    props = _schema_of(opt.calls[0])["$defs"]["Rule"]["properties"]  # type: ignore[index]
    assert props["replaces"]["enum"] == ["", "Answer in one word.", "Use lower case."]
    assert props["section"]["enum"] == ["", "Format", "Format > Case"]
    assert 'set "replaces"' in opt.calls[0].messages[-1].content


async def test_a_rule_replacing_a_line_becomes_a_replace_keeping_the_list_marker() -> None:
    skill = "# Format\n\n- Answer in one word.\n"
    reply = rules_reply("Answer in one upper-case word.", replaces="Answer in one word.")
    out = await reflect(1, skill, [_traj("a")], ScriptedBackend().expect(REFLECT, reply), CFG)
    (edit,) = out.edits
    assert (edit.op, edit.anchor, edit.content) == (
        "replace",
        "Answer in one word.",
        "Answer in one upper-case word.",
    )


async def test_an_empty_rule_with_replaces_deletes_that_line() -> None:
    skill = "- Answer in one word.\n- Be nice.\n"
    reply = {"rules": [{"rule": "", "replaces": "Be nice."}]}
    out = await reflect(1, skill, [_traj("a")], ScriptedBackend().expect(REFLECT, reply), CFG)
    assert [(e.op, e.anchor) for e in out.edits] == [("delete", "Be nice.")]


async def test_a_rule_aimed_at_text_the_skill_lacks_is_added_as_a_new_rule() -> None:
    skill = "- Answer in one word.\n"
    reply = rules_reply("Use upper case.", replaces="Dates are ISO.", section="Output format")
    out = await reflect(1, skill, [_traj("a")], ScriptedBackend().expect(REFLECT, reply), CFG)
    (edit,) = out.edits
    # the skill has no heading, so the schema offered none and the named one is not used
    assert (edit.op, edit.section, edit.content) == ("add", "", "- Use upper case.")
    assert "not in the skill" in edit.rationale


def test_feedback_key_masks_what_differs_between_items() -> None:
    a = feedback_key("expected 'APPLE', got 'apple' (3 words)")
    b = feedback_key('expected "PEAR", got "pear" (12 words)')
    assert a == b


def test_the_dominant_pattern_is_the_largest_feedback_cluster() -> None:
    fails = [_traj(x) for x in "abc"] + [_traj("d", feedback="the reply is empty")]
    shown, ids = dominant_pattern(fails)  # type: ignore[misc]
    assert ids == {"a", "b", "c"} and shown.startswith("expected")
    assert dominant_pattern([]) is None


EMPTY, LONG = "the reply is empty", "the reply is too long: 80 words, at most 5"


def test_minibatches_group_failures_of_like_feedback_without_more_calls() -> None:
    # interleaved kinds: plain cuts of 2 would mix them in every batch
    kinds = {"a": "", "b": EMPTY, "c": "", "d": LONG, "e": EMPTY, "f": LONG, "g": ""}
    trajs = [_traj(i, feedback=f) for i, f in kinds.items()]
    batches = [[t.item_id for t in b] for b in feedback_batches(trajs, 2)]
    assert batches == [["a", "c"], ["b", "e"], ["d", "f"], ["g"]]  # 4 = ceil(7 / 2) calls
    # a piece never splits; small pieces of different kinds share a batch to save calls
    three = [_traj(i, feedback=f) for i, f in {"a": "", "b": EMPTY, "c": LONG}.items()]
    assert [[t.item_id for t in b] for b in feedback_batches(three, 2)] == [["a", "b"], ["c"]]
    assert [len(b) for b in feedback_batches([_traj(i) for i in "abcde"], 2)] == [2, 2, 1]
    assert feedback_batches([], 4) == []
    # the same item sampled twice is two trajectories, both kept
    twice = [_traj("a"), _traj("a"), _traj("b", feedback=EMPTY)]
    assert sum(len(b) for b in feedback_batches(twice, 4)) == 3


async def test_each_reflection_call_sees_one_kind_of_failure() -> None:
    opt = ScriptedBackend().expect(REFLECT, rules_reply("x"), times=2)
    trajs = [_traj(i, feedback=f) for i, f in {"a": "", "b": EMPTY, "c": "", "d": EMPTY}.items()]
    out = await reflect(2, "", trajs, opt, CFG)
    assert [r["items"] for r in out.records if r["mode"] == "shallow"] == [
        ["step_0002/a", "step_0002/c"],
        ["step_0002/b", "step_0002/d"],
    ]


async def test_deep_mode_runs_when_one_feedback_pattern_dominates() -> None:
    deep = rules_reply("Always use upper case.")
    opt = (
        ScriptedBackend()
        .expect(REFLECT, rules_reply("x"), times=2)
        .expect("with the same feedback", deep)
    )
    trajs = [_traj(x) for x in "abcd"]
    out = await reflect(2, "", trajs, opt, CFG)
    opt.assert_done()
    assert [r["mode"] for r in out.records] == ["shallow", "shallow", "deep"]
    deep_edit = out.edits[-1]
    assert deep_edit.source == "deep_reflect" and len(deep_edit.trajectory_ids) == 4
    assert "Feedback they share: expected" in opt.calls[-1].messages[-1].content


async def test_no_deep_mode_when_failures_differ() -> None:
    opt = ScriptedBackend().expect(REFLECT, rules_reply("x"), times=2)
    feedbacks = ["the reply is empty", "expected a number", "too long by far", "wrong language"]
    trajs = [_traj(x, feedback=f) for x, f in zip("abcd", feedbacks, strict=True)]
    out = await reflect(2, "", trajs, opt, CFG)
    opt.assert_done()
    assert [r["mode"] for r in out.records] == ["shallow", "shallow"]


def test_the_schema_sent_to_the_model_is_rules_first() -> None:
    from skillgrad.train.schemas import reflection_model

    schema = request_schema(reflection_model(3, lines=["a"], headings=["H"]))
    assert next(iter(schema["$defs"]["Rule"]["properties"])) == "rule"
    assert schema["properties"]["rules"]["maxItems"] == 3
    json.dumps(schema)  # serialisable as sent


async def test_a_reply_of_rules_the_skill_already_has_is_asked_again_once() -> None:
    skill = "- Answer in upper case.\n"
    opt = (
        ScriptedBackend()
        .expect(REFLECT, rules_reply("answer in upper case"))
        .expect("already in the skill", rules_reply("Reply with the word only."))
    )
    out = await reflect(1, skill, [_traj("a")], opt, CFG)
    opt.assert_done()
    assert [e.content for e in out.edits] == ["- Reply with the word only."]
    assert out.records[0]["reasked"] and out.records[0]["ok"]


async def test_a_repeat_asked_again_keeps_the_first_valid_reply_if_the_second_is_invalid() -> None:
    skill = "- Answer in upper case.\n"
    opt = (
        ScriptedBackend()
        .expect(REFLECT, rules_reply("Answer in upper case."))
        .expect("already in the skill", "not json at all")
    )
    out = await reflect(1, skill, [_traj("a")], opt, CFG)
    opt.assert_done()
    assert out.failed_calls == 0 and [e.content for e in out.edits] == ["- Answer in upper case."]


async def test_a_rule_rejected_before_also_counts_as_a_repeat() -> None:
    from skillgrad.runs.records import RejectedEdit
    from skillgrad.types import Edit

    rejected = [RejectedEdit(1, (Edit("add", "", "- Be brief."),), 0.1, 0.2)]
    opt = (
        ScriptedBackend()
        .expect(REFLECT, rules_reply("Be brief."))
        .expect("rejected before", rules_reply("Answer in upper case."))
    )
    out = await reflect(2, "", [_traj("a")], opt, CFG, rejected=rejected)
    opt.assert_done()
    assert [e.content for e in out.edits] == ["- Answer in upper case."]


async def test_a_reply_with_one_new_rule_is_not_asked_again() -> None:
    skill = "- Answer in upper case.\n"
    reply = rules_reply("Answer in upper case.", "Reply with the word only.")
    opt = ScriptedBackend().expect(REFLECT, reply)
    out = await reflect(1, skill, [_traj("a")], opt, CFG)
    opt.assert_done()
    assert not out.records[0]["reasked"] and len(out.edits) == 2


async def test_the_re_ask_after_repeats_samples_at_the_reask_temperature() -> None:
    from dataclasses import replace

    skill = "- Answer in upper case.\n"
    opt = (
        ScriptedBackend()
        .expect(REFLECT, rules_reply("Answer in upper case."))
        .expect("already in the skill", rules_reply("Reply with the word only."))
    )
    await reflect(3, skill, [_traj("a")], opt, replace(CFG, reask_temperature=0.7))
    first, again = opt.calls
    assert (first.temperature, first.seed) == (0.0, 3)
    assert (again.temperature, again.seed) == (0.7, 4)


CUT = (  # as the 1.5B's rule on TextWorld Commonsense, cut by the grammar's 160-character cap
    "When asked to pick up objects and place them in their usual locations, use the 'take' "
    "command to pick up the object and the 'put' command to put it in the place"
)


def test_a_rule_at_the_string_cap_without_a_sentence_end_is_cut() -> None:
    from skillgrad.models.structured import GRAMMAR_MAX_LENGTH
    from skillgrad.train.rules import is_cut

    assert len(CUT) == GRAMMAR_MAX_LENGTH and is_cut(CUT)
    whole = CUT[: GRAMMAR_MAX_LENGTH - 1] + "."
    assert not is_cut(whole) and not is_cut(whole[:-1] + '."') and not is_cut("Be brief")
    assert not is_cut("x" * 80 + ".")  # a hosted model's long rule that ends is kept


async def test_a_cut_rule_is_asked_again_and_never_enters_the_skill() -> None:
    opt = (
        ScriptedBackend()
        .expect(REFLECT, rules_reply("Answer in upper case.", CUT))
        .expect("was cut off at 160 characters", rules_reply("Answer in upper case.", CUT))
    )
    out = await reflect(1, "", [_traj("a")], opt, CFG)
    opt.assert_done()  # asked again once, saying which rule and why
    assert "Rule 2 was cut off" in opt.calls[-1].messages[-1].content
    # the re-ask cut it again: the complete rule is kept, the half sentence dropped
    assert [e.content for e in out.edits] == ["- Answer in upper case."]

    fixed = (
        ScriptedBackend()
        .expect(REFLECT, rules_reply(CUT))
        .expect("was cut off", rules_reply("Use 'take X' to pick up and 'put X in Y' to place."))
    )
    out = await reflect(1, "", [_traj("a")], fixed, CFG)
    wanted = "- Use 'take X' to pick up and 'put X in Y' to place."
    assert [e.content for e in out.edits] == [wanted]
