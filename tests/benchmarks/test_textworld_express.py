"""TextWorldExpress through the real package and a real JVM (no model): every game's train
episodes replayed from their gold action sequence score 1 through the environment process; a
scripted player wins Pecking Order through the rollout; the folds make disjoint splits; a missing
Java runtime or package is a located error (exit 2); the JVM dies with the run on ``kill -9``."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from skillgrad.benchmarks.textworld_express import (
    GAMES,
    TextWorldExpressTask,
    check_installed,
)
from skillgrad.errors import ConfigError
from skillgrad.tasks.env_pool import EnvProcess, EnvSpec
from skillgrad.tasks.episode_view import episode_actions
from skillgrad.testing import FunctionBackend, user_text
from skillgrad.train.revisit import resume_point
from skillgrad.types import ChatRequest, Trajectory

pytest.importorskip("textworld_express", reason="install with: pip install 'skillgrad[env]'")
if shutil.which("java") is None:  # scripts/test installs it: a missing JVM must not pass quietly
    raise RuntimeError(
        "TextWorldExpress tests need a Java runtime: apt-get install default-jre-headless"
    )

TWX = "skillgrad.benchmarks.textworld_express:TwxEnvironment"


SMALL = {"cookingworld": "numLocations=1,numIngredients=1", "coin": "numLocations=3"}


@pytest.mark.parametrize("game", GAMES)
def test_gold_actions_of_a_train_episode_win_every_game(game: str) -> None:
    process = EnvProcess(EnvSpec(TWX, {"game": game, "params": SMALL.get(game, "")}))
    try:
        first = process.request(
            {"op": "reset", "seed": 3, "options": {"fold": "train", "gold": True}}, 60
        )
        info = first["info"]
        assert info["task"] and info["valid_actions"] and info["gold_actions"], info
        for action in info["gold_actions"]:
            step = process.request({"op": "step", "action": action}, 60)
        assert step["info"]["success"] is True and step["info"]["score"] == 1.0, step
    finally:
        process.close()


def pecking_player(request: ChatRequest) -> str:
    """Reads the book, does what it says, reads again (what the hand-written skill teaches)."""
    said = re.search(r"task is to (take the \w+|[^.]+)", user_text(request))
    if said and "take" in said.group(1):
        return said.group(1).replace("the ", "")
    return "read instructions book"


def test_a_scripted_player_wins_pecking_order_through_the_rollout() -> None:
    task = TextWorldExpressTask(game="peckingorder", n_train=2, n_val=1, n_test=1, max_steps=12)

    async def run() -> list[object]:
        items = task.load_split("train") + task.load_split("test")
        return [await task.rollout(i, "", FunctionBackend(pecking_player)) for i in items]

    try:
        trajs = asyncio.run(run())
    finally:
        task.close()
    for t in trajs:
        assert t.score.passed and t.score.value == 1.0, t.score  # type: ignore[attr-defined]
    assert isinstance(trajs[0].reference, list)  # type: ignore[attr-defined]
    assert trajs[-1].reference is None  # type: ignore[attr-defined]  # test fold: no gold


def walker(request: ChatRequest) -> str:
    """Takes the coin when it can; else looks around (twice at the start) or walks to an exit
    picked by a hash of the turn: a search with detours, the same on every run."""
    text = user_text(request)
    listed = text.rsplit("Valid actions:", 1)[-1].split("\n", 1)[0]
    actions = [a.strip() for a in listed.split("|") if a.strip()]
    turn = sum(m.role == "assistant" for m in request.messages)
    if turn >= 2 and "take coin" in actions:
        return "take coin"
    moves = sorted(a for a in actions if a.startswith("move "))
    if turn < 2 or not moves:
        return "look around"
    return moves[zlib.crc32(f"{turn}:{text[-300:]}".encode()) % len(moves)]


def test_a_searchs_pass_is_replayed_on_the_real_game_without_its_detours() -> None:
    """Coin Collector with the actions listed, gold off: a walker's passing train episodes
    that came back to a room it had left, or looked twice, are replayed by the real game
    without those commands; each shorter path solves again and is what an example shows."""
    params = {"numLocations": 4, "includeDoors": 0}
    task = TextWorldExpressTask(game="coin", n_train=6, n_val=1, n_test=1, max_steps=30,
                                actions="listed", use_gold=False, params=params)  # fmt: skip

    async def run() -> list[Trajectory]:
        return [
            await task.rollout(i, "", FunctionBackend(walker)) for i in task.load_split("train")
        ]

    try:
        trajs = asyncio.run(run())
    finally:
        task.close()
    shortened = 0
    for t in trajs:
        played = [s["action"] for s in t.steps if s["type"] == "env_step"]
        short = [s for s in t.steps if s["type"] == "env_short"]
        assert t.score.passed and played[:2] == ["look around", "look around"], played
        assert len(short) == 1, played  # the repeated look at least goes
        (record,) = short
        assert len(record["actions"]) == len(played) - record["detours_cut"] < len(played)
        assert record["actions"][-1] == "take coin" and record["actions"][0] == "look around"
        assert len(record["observations"]) == len(record["actions"])
        assert episode_actions(t) == "\n".join(record["actions"])
        shortened += record["detours_cut"] > 1  # more than the repeated look: a loop went
    assert shortened >= 1


def book_reader(request: ChatRequest) -> str:
    """Pecking Order: looks around, tries a command the game refuses, then reads the book and
    does the task it names twice (looking around between), then only looks around: an attempt
    that climbs to 0.50 and stops there unsolved."""
    turn = sum(m.role == "assistant" for m in request.messages)
    said = [m.content for m in request.messages if m.role == "user"][-1]
    done = sum(m.content.startswith("take ") for m in request.messages if m.role == "assistant")
    task = re.search(r"current task is to (\w+) the (.+?)\.", said)
    if turn < 2:
        return ("look around", "dance")[turn]
    if task and task.group(1) == "take" and done < 2:
        return f"take {task.group(2)}"
    return "read instructions book" if done < 2 and "current task" not in said else "look around"


def test_an_unsolved_attempts_route_to_its_highest_score_is_replayed_on_the_real_game() -> None:
    """Pecking Order, exploration's variant (actions listed), gold off: an attempt that reached
    0.50 through a refused command records its route there without it, checked by the real
    game; a resumed attempt replays that route."""
    task = TextWorldExpressTask(game="peckingorder", n_train=2, n_val=1, n_test=1, max_steps=12,
                                use_gold=False).exploration_task(routes=True)  # fmt: skip

    async def run() -> list[Trajectory]:
        items = task.load_split("train")
        return [await task.rollout(i, "", FunctionBackend(book_reader)) for i in items]

    try:
        trajs = asyncio.run(run())
    finally:
        task.close()
    for t in trajs:
        played = [s["action"] for s in t.steps if s["type"] == "env_step"]
        (route,) = [s for s in t.steps if s["type"] == "env_route"]
        assert not t.score.passed and route["score"] == 0.5, (played, t.score)
        assert "dance" in played and "dance" not in route["actions"]
        assert route["actions"][-1].startswith("take ") and route["detours_cut"] >= 1
        assert resume_point([t]) == route["actions"]


def test_splits_come_from_the_games_own_folds() -> None:
    task = TextWorldExpressTask(game="coin", n_train=30, n_val=30, n_test=30, seed=1)
    ids = {s: [i.id for i in task.load_split(s)] for s in ("train", "val", "test")}
    assert all(i.startswith("coin-train-") for i in ids["train"])
    assert all(i.startswith("coin-dev-") for i in ids["val"])
    assert all(i.startswith("coin-test-") for i in ids["test"])
    assert len(set(ids["train"])) == 30
    first = task.load_split("val")[0]
    assert first.input["options"] == {"fold": "dev", "gold": False}


def test_unknown_game_and_missing_java_are_located_config_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match=r"'peking' is not a TextWorldExpress game\. Did"):
        TextWorldExpressTask(game="peking")
    with pytest.raises(ConfigError, match=r"coin has no option 'numIngredients'\. Its options"):
        TextWorldExpressTask(game="coin", params={"numIngredients": 2})
    TextWorldExpressTask(game="coin", params={"numLocations": 3, "includeDoors": False})
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ConfigError, match="needs a Java runtime: no 'java' on PATH"):
        check_installed()


def test_missing_java_exits_2_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "twx.yaml"
    config.write_text("env: {task: textworld_express, options: {game: coin}}\n")
    (tmp_path / "s.md").write_text("")
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # python, but no java
    done = subprocess.run(
        [sys.executable, "-m", "skillgrad", "eval", str(config), "--skill", str(tmp_path / "s.md")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "default-jre-headless" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_jvm_dies_with_the_run_on_kill(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", (
            "import time\n"
            "from skillgrad.tasks.env_pool import EnvProcess, EnvSpec\n"
            f"p = EnvProcess(EnvSpec({TWX!r}, {{'game': 'coin'}}))\n"
            "p.request({'op': 'reset', 'seed': 0, 'options': {'fold': 'train'}}, 60)\n"
            "print(p.proc.pid, flush=True)\n"
            "time.sleep(600)\n"
        )],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        worker = int(process.stdout.readline())
        jvms = [p for p in os.listdir("/proc") if p.isdigit() and _in_group(int(p), worker)]
        assert any(b"java" in Path(f"/proc/{p}/cmdline").read_bytes() for p in jvms)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _group_alive(worker):
        time.sleep(0.05)
    assert not _group_alive(worker), "the environment process group (its JVM) outlived the run"


def _in_group(pid: int, pgid: int) -> bool:
    try:
        return os.getpgid(pid) == pgid
    except OSError:
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
