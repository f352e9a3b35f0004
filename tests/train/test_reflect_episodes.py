"""Reflection on environment episodes: the optimizer sees a compact view of each failed episode
(task, first steps and the steps around where it went wrong, repeats folded, the commands the
environment accepted there even in free mode, a train episode's gold actions, the result), and
a long episode stays within a bounded prompt."""

from __future__ import annotations

import asyncio
import itertools

from skillgrad.skill.document import approx_tokens
from skillgrad.tasks.environment import EnvironmentTask
from skillgrad.testing import FunctionBackend, rules_reply, user_text
from skillgrad.train.reflect import ReflectConfig, reflect, render_trajectories
from skillgrad.types import ChatRequest, Trajectory

TINY = "skillgrad.testing:TinyEnv"


def played(split: str, reply: object, max_steps: int = 12) -> Trajectory:
    task = EnvironmentTask(TINY, n_train=1, n_val=1, n_test=1, max_steps=max_steps)
    try:
        item = task.load_split(split)[0]  # type: ignore[arg-type]
        return asyncio.run(task.rollout(item, "", FunctionBackend(reply)))  # type: ignore[arg-type]
    finally:
        task.close()


def test_a_failed_train_episode_shows_where_it_went_wrong_the_commands_and_the_gold() -> None:
    t = played("train", lambda r: "Open the box please")
    view = render_trajectories([t])
    assert view.startswith(f"### episode {t.item_id}: score 0.00 (FAIL)")
    assert "Task: Unlock the door." in view
    assert "1-12. > 'Open the box please' [not an accepted command] (the same 12 times)" in view
    assert "Where it went wrong: step 1 ('Open the box please')" in view
    assert "Commands the environment accepted at step 1: " in view  # free mode: target never saw
    assert not any("accepted" in m.content for m in t.messages)
    assert f"the target never sees them): {' | '.join(t.reference)}" in view
    assert "Result: step limit reached after 12 steps unsolved" in view


def test_a_command_in_the_wrong_letter_case_is_marked_with_the_form_the_game_lists() -> None:
    # TextWorldExpress answers "Take banana" with "Unknown action" when it lists "take banana":
    # the optimizer must see that the first command already failed, and in which form it is taken
    t = played("train", lambda r: "LOOK", max_steps=2)
    steps = [s for s in t.steps if s["type"] == "env_step"]
    assert [(s["valid"], s.get("listed_as")) for s in steps] == [(False, "look")] * 2
    view = render_trajectories([t])
    assert "1-2. > 'LOOK' [not an accepted command, listed as 'look'] (the same 2 times)" in view
    assert "Where it went wrong: step 1 ('LOOK')" in view
    assert "(first at step 1: 'LOOK', listed as 'look')" in t.score.feedback


def test_val_episodes_have_no_reference_and_passed_ones_no_failure() -> None:
    val = render_trajectories([played("val", lambda r: "look")])
    assert "Reference actions" not in val
    first = user_text

    def solve(request: ChatRequest) -> str:
        text = first(request)
        if "closed" in text:
            return "open " + text.split("closed ")[1].split()[0]
        if "inside" in text:
            return "take " + text.split(" inside")[0].split()[-1]
        return "unlock door"

    passed = render_trajectories([played("train", solve)])
    assert "(PASS)" in passed and "Where it went wrong" not in passed


def test_a_long_episode_is_cut_to_its_start_and_the_steps_around_the_failure() -> None:
    words = itertools.count()
    t = played("train", lambda r: f"{next(words)} look {'x' * 300}", max_steps=60)
    view = render_trajectories([t])
    assert "steps cut]…" in view
    assert approx_tokens(view) < 700, approx_tokens(view)


def test_reflect_sends_the_episode_view_to_the_optimizer() -> None:
    t = played("train", lambda r: "Open the box please")
    sent: list[str] = []

    def optimizer(request: ChatRequest) -> dict[str, object]:
        sent.append(user_text(request))
        return rules_reply("Type only the commands the game accepts.")

    cfg = ReflectConfig(2, 2, True, 0.6, 1, 320)
    result = asyncio.run(reflect(1, "", [t], FunctionBackend(optimizer), cfg))
    assert len(sent) == 1 and "Commands the environment accepted at step 1" in sent[0]
    assert result.edits and result.edits[0].content == "- Type only the commands the game accepts."
