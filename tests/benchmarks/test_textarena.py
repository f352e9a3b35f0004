"""TextArena through the real package (no model): a scripted player solves Tower of Hanoi through
the rollout with the action on a reply's second line; a player cut by ``max_steps`` keeps the
game's partial credit; a move the game rejects is marked with its reason in the optimizer's view;
a missing package or an unknown game is one located error at start (exit 2), before any model
call."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillgrad.benchmarks.textarena import GAME_IDS, TextArenaEnvironment, TextArenaTask
from skillgrad.errors import ConfigError
from skillgrad.tasks.episode import episode_view
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Trajectory

pytest.importorskip("textarena", reason="install with: pip install 'skillgrad[env]'")

HANOI = ["A C", "A B", "C B", "A C", "B A", "B C", "A C"]  # 3 disks from A to C: 7 moves


def hanoi_player(moves: list[str]) -> FunctionBackend:
    """Plays ``moves`` in order, each on the reply's second line after a sentence of thought
    (as chat models answer), so only ``action_pattern`` finds it."""

    def reply(request: ChatRequest) -> str:
        played = sum(m.role == "assistant" for m in request.messages)
        move = moves[played] if played < len(moves) else moves[-1]
        return f"Let me look at the towers first.\nI move [{move}] now."

    return FunctionBackend(reply)


def play(task: TextArenaTask, moves: list[str], split: str = "val") -> Trajectory:
    async def run() -> Trajectory:
        (item,) = task.load_split(split)  # type: ignore[arg-type]
        return await task.rollout(item, "", hanoi_player(moves))

    try:
        return asyncio.run(run())
    finally:
        task.close()


def test_a_scripted_player_solves_tower_of_hanoi_with_the_action_on_line_two() -> None:
    t = play(TextArenaTask(game="TowerOfHanoi", n_train=1, n_val=1, n_test=1), HANOI)
    assert t.infra_error is None and t.score.value == 1.0 and t.score.passed, t.score
    played = [s for s in t.steps if s["type"] == "env_step"]
    assert [s["action"] for s in played] == [f"[{m}]" for m in HANOI]
    assert "solved in 7 steps" in t.score.feedback
    assert played[-1]["observation"].startswith("Game over: Congratulations! You solved")
    assert t.steps[-1] == {"type": "env_end", "end": "terminated"}  # the game ended it


def test_an_episode_cut_by_max_steps_keeps_the_games_partial_credit() -> None:
    task = TextArenaTask(game="TowerOfHanoi", n_train=1, n_val=1, n_test=1, max_steps=6)
    t = play(task, HANOI)  # after 6 moves two of three disks are on C
    assert t.score.value == pytest.approx(2 / 3) and not t.score.passed, t.score
    assert "step limit reached after 6 steps" in t.score.feedback


def test_a_move_the_game_rejects_is_marked_with_its_reason_in_the_optimizers_view() -> None:
    t = play(TextArenaTask(game="TowerOfHanoi", n_train=1, n_val=1, n_test=1), ["A C", "A C"])
    rejected = [s for s in t.steps if s["type"] == "env_step" and s["valid"] is False]
    assert rejected and rejected[0]["step"] == 2, t.steps
    assert "larger disk on a smaller disk" in rejected[0]["invalid_reason"]
    view = episode_view(t.steps, t.reference, t.score.feedback, t.score.passed)
    assert "2. > '[A C]' [not an accepted command: You tried to place a larger disk" in view
    assert "Where it went wrong: step 2" in view
    assert "actions were not commands the environment accepts (first at step 2" in view
    assert "  A: [3, 2, 1]\n  B: []\n  C: []" in view  # the whole board, row by row


def test_splits_are_disjoint_reproducible_and_the_games_are_checked() -> None:
    task = TextArenaTask(game="Sudoku", variant="v0-easy", n_train=5, n_val=5, n_test=5)
    ids = {s: {i.id for i in task.load_split(s)} for s in ("train", "val", "test")}
    assert not (ids["train"] & ids["val"]) and not (ids["val"] & ids["test"])
    assert all(i.startswith("Sudoku-v0-easy-val-") for i in ids["val"])
    env = TextArenaEnvironment("Sudoku-v0-easy")
    assert env.reset(seed=3)[0] == env.reset(seed=3)[0] != env.reset(seed=4)[0]
    assert len(GAME_IDS) == 56
    with pytest.raises(
        ConfigError, match=r"'v0-easyy': Sudoku has no such variant. Did you mean 'v0-easy'"
    ):
        TextArenaTask(game="Sudoku", variant="v0-easyy")
    with pytest.raises(ConfigError, match=r"'Wordle' is not a TextArena game that runs offline"):
        TextArenaTask(game="Wordle")


def _eval(tmp_path: Path, env: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    """``skillgrad eval`` on ``env`` (a YAML mapping) with a target that leaves a mark when
    called."""
    (tmp_path / "target.py").write_text(
        "from pathlib import Path\n\n\ndef reply(request):\n"
        "    Path(__file__).with_name('called').write_text('yes')\n    return '[A C]'\n"
    )
    config = tmp_path / "ta.yaml"
    config.write_text(
        f"models:\n  target: {{provider: function, model: '{tmp_path}/target.py:reply'}}\n"
        f"env: {env}\n"
    )
    (tmp_path / "s.md").write_text("")
    paths = [p for p in (pythonpath, os.environ.get("PYTHONPATH", "")) if p]
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", "eval", str(config), "--skill", str(tmp_path / "s.md")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
    )  # fmt: skip


def test_an_environment_that_cannot_be_built_is_one_located_error_at_start(
    tmp_path: Path,
) -> None:
    """A textarena that fails to import (shadowed here) reaches the environment process: the
    session's start check reports it once, with the install line, and no model is called."""
    shadow = tmp_path / "shadow"
    (shadow / "textarena").mkdir(parents=True)
    (shadow / "textarena" / "__init__.py").write_text("raise ImportError('textarena is broken')\n")
    env = "{task: textarena, options: {game: TowerOfHanoi, n_train: 2, n_val: 2, n_test: 2}}"
    done = _eval(tmp_path, env, str(shadow))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("cannot be built") == 1, done.stderr
    assert "textarena is broken" in done.stderr and "pip install textarena==0.7.4" in done.stderr
    assert "Check the target model endpoint" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr and not (tmp_path / "called").exists()


def test_a_generic_environment_that_cannot_be_built_is_one_located_error_at_start(
    tmp_path: Path,
) -> None:
    env = "{task: environment, options: {env: 'missing_module_xyz:Env', n_val: 3}}"
    done = _eval(tmp_path, env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("cannot be built") == 1, done.stderr
    assert "missing_module_xyz" in done.stderr and "skillgrad[env]" in done.stderr
    assert "Check the target model endpoint" not in done.stderr + done.stdout
    assert not (tmp_path / "called").exists()


def test_an_unknown_game_exits_2_naming_the_games(tmp_path: Path) -> None:
    done = _eval(tmp_path, "{task: textarena, options: {game: TowerOfHanoy}}")
    assert done.returncode == 2, done.stderr
    assert "Did you mean 'TowerOfHanoi'?" in done.stderr and "Traceback" not in done.stderr
