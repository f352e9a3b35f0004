"""What any environment may use, through real environment processes: ``action_pattern`` (the
action anywhere in the reply, checked at config time), ``info["invalid_action"]`` (a rejected
move marked, with its reason, in the feedback and the optimizer's view), the whole first
observation in that view, and the start check that builds the environment once."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from skillgrad.errors import ConfigError
from skillgrad.registry import load_task
from skillgrad.tasks.base import task_abilities
from skillgrad.tasks.env_worker import canonical_info
from skillgrad.tasks.environment import EnvironmentTask, parse_action
from skillgrad.tasks.episode import episode_view
from skillgrad.testing import FunctionBackend
from skillgrad.types import Trajectory

# a 5x5 board game: walk right to the goal with [R]; any other move is rejected by the game
BOARD_ENV = """
ROWS = ["P . . . G", ". # # # .", ". . . . .", ". # . # .", ". . . . ."]


class Board:
    def reset(self, *, seed=None, options=None):
        self.col = 0
        return "Walk to G.\\n\\n" + "\\n".join(ROWS), {}

    def step(self, action):
        if action != "[R]":
            return "Try again.", 0.0, False, False, {"invalid_action": f"no move {action}"}
        self.col += 1
        done = self.col == 4
        return f"You are at column {self.col}.", 0.25, done, False, {}
"""


def board_task(tmp_path: Path, **options: object) -> EnvironmentTask:
    (tmp_path / "board.py").write_text(BOARD_ENV)
    opts = {"env": "board.py:Board", "n_train": 1, "n_val": 1, "n_test": 1, **options}
    task = load_task("environment", opts, base_dir=tmp_path)
    assert isinstance(task, EnvironmentTask)
    return task


def play(task: EnvironmentTask, replies: list[str]) -> Trajectory:
    def reply(request: object) -> str:
        played = sum(m.role == "assistant" for m in request.messages)  # type: ignore[attr-defined]
        return replies[min(played, len(replies) - 1)]

    async def run() -> Trajectory:
        (item,) = task.load_split("val")
        return await task.rollout(item, "", FunctionBackend(reply))

    try:
        return asyncio.run(run())
    finally:
        task.close()


def test_action_pattern_reads_the_action_anywhere_in_the_reply(tmp_path: Path) -> None:
    bracket = re.compile(r"\[[^\]]+\]")
    assert parse_action("I think.\nMy move: [7] and not [8]", 120, bracket) == "[7]"
    assert parse_action("no brackets here\nsecond", 120, bracket) == "no brackets here"
    reply = "The goal is to the right.\nSo I play [R]."
    t = play(board_task(tmp_path, action_pattern=r"\[[A-Z]\]"), [reply])
    assert t.score.passed and t.score.value == 1.0, t.score
    assert play(board_task(tmp_path), [reply]).score.value == 0.0  # the first line is no move


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("[unclosed", "is not a regular expression"),
        ("x" * 201, "has 201 characters; at most 200"),
        ("", "must be a non-empty regular expression"),
        (7, "must be a non-empty regular expression"),
    ],
)
def test_a_bad_action_pattern_is_a_located_config_error(pattern: object, said: str) -> None:
    with pytest.raises(ConfigError, match=f"env.options.action_pattern.*{re.escape(said)}"):
        EnvironmentTask("skillgrad.testing:TinyEnv", action_pattern=pattern)  # type: ignore[arg-type]


def test_a_move_the_environment_rejects_is_marked_with_its_reason(tmp_path: Path) -> None:
    t = play(board_task(tmp_path, max_steps=3), ["[R]", "[U]", "[R]"])
    steps = [s for s in t.steps if s["type"] == "env_step"]
    assert [s["valid"] for s in steps] == [None, False, None]
    assert steps[1]["invalid_reason"] == "no move [U]"
    assert "1 of 3 actions were not commands the environment accepts (first at step 2: '[U]'" in (
        t.score.feedback
    )
    view = episode_view(t.steps, t.reference, t.score.feedback, t.score.passed)
    assert "2. > '[U]' [not an accepted command: no move [U]]" in view
    assert "Where it went wrong: step 2" in view
    assert canonical_info({"invalid_action": True}, 100) == {"invalid_action": True}
    assert canonical_info({"invalid_action": ""}, 100) == {}


def test_the_optimizers_view_keeps_the_whole_first_observation_row_by_row(tmp_path: Path) -> None:
    long_row = ". " * 300  # a first observation far past the old 400-character cut
    env = BOARD_ENV.replace('". . . . ."]', f'". . . . .", "{long_row.strip()}"]')
    (tmp_path / "wide.py").write_text(env)
    task = load_task(
        "environment",
        {"env": "wide.py:Board", "n_train": 1, "n_val": 1, "n_test": 1, "max_steps": 1},
        base_dir=tmp_path,
    )
    assert isinstance(task, EnvironmentTask)
    t = play(task, ["[R]"])
    view = episode_view(t.steps, t.reference, t.score.feedback, t.score.passed)
    assert "Start:\n  Walk to G.\n\n  P . . . G\n  . # # # .\n" in view
    assert f"  {long_row.strip()}\n" in view


def test_the_start_check_builds_the_environment_once_and_names_the_fix(tmp_path: Path) -> None:
    task = EnvironmentTask("missing_module_xyz:Env", n_train=1, n_val=1, n_test=1)
    with pytest.raises(
        ConfigError, match=r"cannot be built .*missing_module_xyz.*skillgrad\[env\]"
    ):
        task_abilities(task).check_ready()
    task.close()
    ready = board_task(tmp_path)
    task_abilities(ready).check_ready()  # built: its process serves the first episode
    (process,) = ready.pool.idle
    assert process.made and process.alive
    assert play(ready, ["[R]"] * 4).score.passed


def test_exploration_asks_for_routes_only_of_a_task_that_takes_them() -> None:
    """``TaskAbilities.exploration_task``: ``routes`` reaches a task whose exploration variant
    takes the keyword; a task whose variant does not is called as before (a plugin written
    before it existed keeps working with train.explore_resume on); a task without a variant
    explores as itself."""
    seen: list[tuple[int, dict[str, object]]] = []

    class WithRoutes:
        name = "with"

        def exploration_task(self, replayed: int = 0, routes: bool = False) -> object:
            seen.append((replayed, {"routes": routes}))
            return self

    class Older:
        name = "older"

        def exploration_task(self, replayed: int = 0) -> object:
            seen.append((replayed, {}))
            return self

    class Plain:
        name = "plain"

    new, old, plain = WithRoutes(), Older(), Plain()
    abilities = task_abilities(new)  # type: ignore[arg-type]
    assert abilities.exploration_routes
    assert abilities.exploration_task(new, 2, routes=True) is new  # type: ignore[arg-type]
    assert abilities.exploration_task(new, 0) is new  # type: ignore[arg-type]
    older = task_abilities(old)  # type: ignore[arg-type]
    assert not older.exploration_routes
    assert older.exploration_task(old, 3, routes=True) is old  # type: ignore[arg-type]
    assert seen == [(2, {"routes": True}), (0, {"routes": False}), (3, {})]
    assert task_abilities(plain).exploration_task(plain, 1, routes=True) is plain  # type: ignore[arg-type]
