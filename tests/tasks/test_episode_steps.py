"""An environment step is a typed record (``tasks/episode.py``) whose JSON is exactly the dict the
rollout always wrote; old run directories' dicts read back, a step of another kind is skipped,
and ``train/`` never names a step kind (the episode renders itself: ``tasks/views.py``)."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from skillgrad.tasks.episode import (
    Ending,
    EnvEnd,
    EnvGold,
    EnvReset,
    EnvStep,
    EpisodeError,
    back_and_forth,
    ends_text,
    env_steps,
    episode_ending,
    episode_steps,
    episode_trail,
    episode_view,
    failing_step,
    is_episode,
    score_changes,
)

ROOT = Path(__file__).resolve().parents[2]
TINY = json.loads((ROOT / "tests/fixtures/episode_views/tinyenv.json").read_text())
STEP_KINDS = ("env_reset", "env_step", "env_gold")  # the kinds the fixtures hold
LATER_STEP_KINDS = ("env_short", "env_route", "env_end")  # written by code newer than the fixtures
ROLLOUT_STEP_KINDS = ("agent_exit", "tool_call")  # an agent-harness rollout's, a tool call's
STEP_KEYS = ("type", "action")  # the keys a step's kind is sniffed by

WRITTEN: list[dict[str, Any]] = [
    {"type": "env_reset", "task": "Unlock it.", "observation": "Room", "valid_actions": ["look"]},
    {"type": "env_reset", "task": "", "observation": "Board:\n. .", "valid_actions": None},
    {
        "type": "env_step", "step": 2, "reply": "LOOK\nmore", "action": "LOOK", "valid": False,
        "valid_actions": ["look"], "observation": "Huh?", "reward": 0.0, "score": 0.25,
        "listed_as": "look", "env_error": "raised ValueError: x", "invalid_reason": "no move",
    },
    {
        "type": "env_step", "step": 1, "reply": "look", "action": "look", "valid": None,
        "valid_actions": None, "observation": "", "reward": 1, "score": 1.0,
    },
    {"type": "env_gold", "detours_cut": 4, "observations": ["a", "b"]},
    {"type": "env_gold", "observations": []},
    {"type": "env_short", "actions": ["east", "take coin"], "observations": ["a", "b"],
     "detours_cut": 2},
    {"type": "env_route", "actions": ["east", "east"], "score": 0.5, "detours_cut": 3},
    {"type": "env_end", "end": "context_full"},
    {"type": "error", "reason": "the process died", "source": "environment"},
    {"type": "error", "reason": "ModelError: down"},
]  # fmt: skip


@pytest.mark.parametrize("step", WRITTEN)
def test_every_step_kind_reads_back_to_the_same_dict_in_the_same_key_order(
    step: dict[str, Any],
) -> None:
    (record,) = episode_steps([step])
    assert record.kind == step["type"]
    assert record.to_json() == step and list(record.to_json()) == list(step)


def test_the_steps_of_real_episodes_round_trip() -> None:
    edited = {"old_keys", "every_key"}  # copies with keys dropped, or added in another order
    steps = [s for name, t in TINY.items() if name not in edited for s in t["steps"]]
    kinds = {s["type"] for s in steps}
    assert {*STEP_KINDS, "error"} <= kinds  # every kind, a step of no known kind too
    for s in steps:
        for record in episode_steps([s]):
            assert record.to_json() == s and list(record.to_json()) == list(s)


def test_the_records_build_the_dicts_the_rollout_writes() -> None:
    assert EnvStep(step=1, action="look", observation="x").to_json() == {
        "type": "env_step", "step": 1, "reply": "", "action": "look", "valid": None,
        "valid_actions": None, "observation": "x", "reward": 0.0, "score": 0.0,
    }  # fmt: skip
    assert EnvGold(observations=["a"]).to_json() == {"type": "env_gold", "observations": ["a"]}
    assert EpisodeError(reason="r").to_json() == {"type": "error", "reason": "r"}
    assert EnvReset().to_json() == {
        "type": "env_reset", "task": "", "observation": "", "valid_actions": None,
    }  # fmt: skip


def test_an_old_dict_without_optional_keys_reads_with_defaults() -> None:
    old = [
        {"type": "env_reset", "observation": "A room."},
        {"type": "env_step", "step": 1, "action": "look", "observation": "Dark.", "extra": 1},
        {"type": "env_gold"},
        {"type": "error"},
    ]
    reset, step, gold, error = episode_steps(old)
    assert reset == EnvReset(task="", observation="A room.", valid_actions=None)
    assert step == EnvStep(step=1, action="look", observation="Dark.")
    assert step.valid is None and step.listed_as is None and step.env_error is None
    assert gold == EnvGold(observations=None, detours_cut=None)
    assert error == EpisodeError(reason="", source=None)


def test_steps_of_other_kinds_and_non_dicts_are_skipped() -> None:
    steps = [
        {"type": "tool_call", "tool": "add"},
        {"type": "agent_exit", "code": 0},
        {"type": ["env_step"]},
        {"action": "look"},
        "env_step",
        None,
        {"type": "env_step", "step": 1, "action": "look"},
    ]
    assert episode_steps(steps) == [EnvStep(step=1, action="look")]
    assert env_steps(steps) == [EnvStep(step=1, action="look")]
    assert not is_episode(steps) and is_episode([{"type": "env_reset"}])


def test_how_an_episode_ended_is_read_from_its_last_end_record_as_stored() -> None:
    """``episode_ending``: the last ``env_end`` record's end, ``solved`` when it passed,
    ``error`` when it could not be scored; no record, or one a run directory damaged (an end
    that is no known one, not text, or a pass claimed by a failed episode): ``unrecorded``.
    ``fell``: it ended below a score it had reached (a damaged score is no score)."""

    def steps(*scores: Any, end: Any = "step_limit") -> list[dict[str, Any]]:
        played = [EnvStep(step=i + 1, action="a", score=v).to_json() for i, v in enumerate(scores)]
        return [*played, EnvEnd(end).to_json()] if end is not None else played

    assert episode_ending(steps(0.0, 0.5, 0.5), False, False) == Ending("step_limit", False)
    assert episode_ending(steps(0.5, 0.0, end="terminated"), False, False) == Ending(
        "terminated", True
    )
    assert episode_ending(steps(0.0, 1.0, end="terminated"), True, False) == Ending("solved", False)
    assert episode_ending(steps(0.5, 0.0), False, True) == Ending("error", False)
    for damaged in (None, "solved", "unsolved", "gone", 5, ["context_full"]):
        assert episode_ending(steps(0.0, end=damaged), False, False).end == "unrecorded"
    last = [*steps(0.0), EnvEnd("context_full").to_json()]
    assert episode_ending(last, False, False).end == "context_full"
    assert not episode_ending(steps(0.5, "0.9", float("nan"), 0.5), False, False).fell
    assert not episode_ending([], False, False).fell


def test_the_ends_are_said_in_words_only_when_they_say_more_than_pass_or_fail() -> None:
    assert ends_text({"step_limit": 3, "context_full": 1, "solved": 1}) == (
        "3 ran out of steps, 1 filled the target's context window, 1 solved"
    )
    assert ends_text({"unsolved": 4, "solved": 1}) == ""  # a chat task's attempts
    assert ends_text({"surprise": 2}) == "2 surprise"  # a later version's end, as stored
    assert ends_text(None) == ends_text(["step_limit"]) == ends_text({}) == ""


def test_train_names_no_step_kind() -> None:
    """``train/`` asks a trajectory's view (``tasks.views.view_of``), never reads a step by its
    kind or its keys (an environment step's, an agent's exit, a tool call, an action) nor sniffs
    whether a trajectory is an episode."""
    found = []
    for path in sorted((ROOT / "src/skillgrad/train").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if (
                isinstance(node, ast.Constant)
                and node.value in STEP_KINDS + LATER_STEP_KINDS + ROLLOUT_STEP_KINDS
            ):
                found.append(f"{where}: {node.value!r}")
            if isinstance(node, ast.Constant) and node.value in STEP_KEYS:
                found.append(f"{where}: reads a step's {node.value!r}")
            name = getattr(node, "id", None) or getattr(node, "attr", None)
            if isinstance(node, (ast.Name, ast.Attribute)) and name == "is_episode":
                found.append(f"{where}: is_episode")
            if isinstance(node, ast.alias) and node.name in ("is_episode", "transcript_view"):
                found.append(f"{where}: imports {node.name}")
    assert not found, "train/ names a step kind:\n" + "\n".join(found)


def test_a_passing_episode_cut_short_lists_every_command_in_order() -> None:
    """The read-then-act loop of a passing episode is its procedure: the compact view cuts its
    middle steps, so it lists every command too (a failed or a short episode does not)."""
    from skillgrad.tasks.episode import episode_view

    actions = ["read book", "take a", "read book", "take b", "read book", "take c", "read book"]
    steps = [EnvReset(task="Follow the book.", observation="A room.").to_json()]
    steps += [
        EnvStep(step=n, action=a, observation=f"answer {n}").to_json()
        for n, a in enumerate(actions, 1)
    ]
    passed = episode_view(steps, None, "solved", passed=True)
    assert "steps cut]" in passed
    assert f"Every command, in order: {' | '.join(actions)}" in passed
    assert "Every command" not in episode_view(steps, None, "unsolved", passed=False)
    short = steps[:4]
    assert "Every command" not in episode_view(short, None, "solved", passed=True)


def _step(n: int, action: str, score: object) -> dict[str, Any]:
    return {"type": "env_step", "step": n, "action": action, "score": score}


def test_the_feedback_says_where_an_unsolved_episodes_score_moved() -> None:
    """A lost game falls back to 0: what scored before it and what lost it are named in order;
    steps that did not move it, and stored scores that are no finite number, say nothing."""
    reset = {"type": "env_reset", "task": "t", "observation": "o"}
    steps = [
        reset,
        _step(1, "read book", 0.0),
        _step(2, "take banana", 0.25),
        _step(3, "look", 0.25),
        _step(4, "take pear", "0.9"),
        _step(5, "take apple", float("nan")),
        _step(6, "put banana in bed", 0.0),
    ]
    assert score_changes(steps) == (
        "the score rose to 0.25 at step 2 ('take banana'), fell to 0.00 at step 6 "
        "('put banana in bed')"
    )
    assert score_changes([reset, _step(1, "look", 0.0)]) is None
    assert score_changes([]) is None
    climbing = [reset, *(_step(i, f"a{i}", i / 10) for i in range(1, 8))]
    said = score_changes(climbing)
    assert said is not None and said.count("rose to") == 4
    assert said.endswith("rose to 0.40 at step 4 ('a4'), then changed 3 more time(s)")


def test_where_it_went_wrong_is_where_the_score_fell_before_a_harmless_repeat() -> None:
    """A refused action first; else the action after which the score fell (a task done out of
    order loses its points); else the first repeat that changed nothing; else the last step.
    A stored score that is no number is no fall."""

    def played(*rows: tuple[str, object]) -> list[EnvStep]:
        return env_steps([_step(i, a, score) for i, (a, score) in enumerate(rows, 1)])

    lost = played(("read book", 0.0), ("take banana", 0.25), ("look", 0.25), ("look", 0.25),
                  ("put banana in bed", 0.0), ("take orange", 0.0))  # fmt: skip
    assert failing_step(lost) == 4
    assert failing_step(played(("look", 0.0), ("look", 0.0), ("take x", 0.0))) == 1
    assert failing_step(played(("a", 0.5), ("b", "0.1"), ("c", float("nan")), ("d", 0.5))) == 3
    refused = [dataclasses.replace(s, valid=i == 0) for i, s in enumerate(lost)]
    assert failing_step(refused) == 1
    view = episode_view([{"type": "env_reset", "task": "t"}, *(s.to_json() for s in lost)], None,
                        "lost")  # fmt: skip
    assert "Where it went wrong: step 5 ('put banana in bed')" in view


def test_the_feedback_says_when_an_episode_went_back_and_forth() -> None:
    """Six or more actions alternating between two (up to case and spacing) are named, the
    longest stretch with where it began; a repeated single action or a short detour is not;
    ``episode_trail`` holds it before the score changes."""
    reset = {"type": "env_reset", "task": "t", "observation": "o"}
    walk = ["look", "move south", "move north", "Move South", "move north", "move  south",
            "move north", "take coin"]  # fmt: skip
    steps = [reset, *(_step(i, a, 0.0) for i, a in enumerate(walk, 1))]
    assert back_and_forth(steps) == (
        "it went back and forth between 'move south' and 'move north' for 6 actions in a row "
        "from step 2"
    )
    five = [reset, *(_step(i, a, 0.0) for i, a in enumerate(walk[1:6], 1))]
    assert back_and_forth(five) is None
    same = [reset, *(_step(i, "look", 0.0) for i in range(1, 9))]
    assert back_and_forth(same) is None and back_and_forth([]) is None
    steps.append(_step(9, "take coin", 1.0))
    assert episode_trail(steps) == [
        back_and_forth(steps),
        "the score rose to 1.00 at step 9 ('take coin')",
    ]
