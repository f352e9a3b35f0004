"""The environment rollout against ``skillgrad.testing.TinyEnv`` in real environment processes:
scores and partial credit, the step limit, valid actions (listed and free), the gold reference
(train only, never shown to the target), crashing / dying / hanging environments (a step that
raises or hangs ends the episode, scored; a process that dies is missing data; either way the
process group is gone), hostile observations, and a plain ``file.py:Class``."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path

import pytest

from fakes_env import play
from skillgrad.errors import ConfigError
from skillgrad.registry import load_task
from skillgrad.tasks.env_worker import canonical_info
from skillgrad.tasks.environment import (
    EnvironmentTask,
    check_action,
    loop_erased,
    parse_action,
    shortcuts,
)
from skillgrad.tasks.episode import env_steps, episode_steps, peak_route
from skillgrad.tasks.episode_view import episode_actions, render_observed_episode
from skillgrad.tasks.views import view_of
from skillgrad.testing import FunctionBackend, user_text
from skillgrad.types import ChatRequest, Score, Trajectory

TINY = "skillgrad.testing:TinyEnv"


def solver(request: ChatRequest) -> str:
    return f"Action: {play(user_text(request))}."  # labelled and with a period: still read


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_dead(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


async def play_all(
    task: EnvironmentTask, split: str, reply: object, skill: str = ""
) -> list[Trajectory]:
    backend = FunctionBackend(reply)  # type: ignore[arg-type]
    items = task.load_split(split)  # type: ignore[arg-type]
    try:
        return list(await asyncio.gather(*(task.rollout(i, skill, backend) for i in items)))
    finally:
        task.close()


def test_solved_episodes_score_one_and_say_so() -> None:
    task = EnvironmentTask(TINY, n_train=3, n_val=1, n_test=1)
    trajs = asyncio.run(play_all(task, "train", solver, "Be quick."))
    for t in trajs:
        assert t.score.value == 1.0 and t.score.passed, t.score
        assert t.score.feedback == "solved in 3 steps (score 1.00)"
        assert t.messages[0].role == "system" and t.messages[0].content == "Be quick."
        assert [m.role for m in t.messages[1:3]] == ["user", "assistant"]
        assert t.output.count(" | ") == 2 and t.infra_error is None


def test_partial_credit_and_the_step_limit() -> None:
    def two_then_look(request: ChatRequest) -> str:
        action = play(user_text(request))
        return "look" if action == "unlock door" else action

    task = EnvironmentTask(TINY, n_train=1, n_val=1, n_test=1, max_steps=5)
    (t,) = asyncio.run(play_all(task, "train", two_then_look))
    assert t.score.value == pytest.approx(2 / 3) and not t.score.passed
    assert t.score.feedback.startswith("step limit reached after 5 steps unsolved; score 0.67")
    assert "'look' 3 times in a row" in t.score.feedback
    opened, took = t.output.split(" | ")[:2]
    assert t.score.feedback.endswith(
        f"; the score rose to 0.33 at step 1 ('{opened}'), rose to 0.67 at step 2 ('{took}')"
    )
    assert sum(1 for s in t.steps if s["type"] == "env_step") == 5


def test_valid_actions_are_listed_only_in_listed_mode_and_marked_in_steps() -> None:
    listed = EnvironmentTask(TINY, n_train=1, n_val=1, n_test=1, actions="listed", max_steps=2)
    (t,) = asyncio.run(play_all(listed, "train", lambda r: "dance"))
    users = [m.content for m in t.messages if m.role == "user"]
    assert all("Valid actions: " in u for u in users)
    free = EnvironmentTask(TINY, n_train=1, n_val=1, n_test=1, max_steps=2)
    (f,) = asyncio.run(play_all(free, "train", lambda r: "dance"))
    assert not any("Valid actions" in m.content for m in f.messages)
    steps = [s for s in f.steps if s["type"] == "env_step"]
    assert [s["valid"] for s in steps] == [False, False]
    assert "look" in steps[0]["valid_actions"]
    assert "2 of 2 actions were not commands the environment accepts" in f.score.feedback


@pytest.mark.parametrize(
    ("action", "listed", "expected"),
    [
        ("take banana", ["eat apple", "take banana"], (True, None)),
        ("take  banana", ["take banana "], (True, None)),  # spaces do not count
        ("Take banana", ["eat apple", "take banana"], (False, "take banana")),
        ("take the banana", ["take banana"], (False, None)),
        ("look", None, (None, None)),  # no list: unknown
        ("look", [], (None, None)),
    ],
)
def test_an_action_counts_as_accepted_only_exactly_as_the_environment_lists_it(
    action: str, listed: list[str] | None, expected: tuple[bool | None, str | None]
) -> None:
    assert check_action(action, listed) == expected


def test_gold_reference_is_kept_for_train_episodes_only_and_never_shown() -> None:
    task = EnvironmentTask(TINY, n_train=2, n_val=2, n_test=1, max_steps=2)
    train = asyncio.run(play_all(task, "train", lambda r: "look"))
    val = asyncio.run(play_all(task, "val", lambda r: "look"))
    for t in train:
        assert isinstance(t.reference, list) and len(t.reference) == 3
        shown = "\n".join(m.content for m in t.messages)
        assert " | ".join(t.reference) not in shown and t.reference[1] not in shown
    assert all(t.reference is None for t in val)


def test_splits_are_seeded_disjoint_and_stable() -> None:
    task = EnvironmentTask(TINY, n_train=5, n_val=5, n_test=5, seed=3)
    ids = {s: [i.id for i in task.load_split(s)] for s in ("train", "val", "test")}  # type: ignore[arg-type]
    assert ids == {s: [i.id for i in task.load_split(s)] for s in ids}  # type: ignore[arg-type]
    assert not set(ids["train"]) & set(ids["val"]) and not set(ids["val"]) & set(ids["test"])
    other = EnvironmentTask(TINY, n_train=5, n_val=5, n_test=5, seed=4)
    assert [i.id for i in other.load_split("val")] != ids["val"]


@pytest.mark.parametrize(
    ("action", "says", "missing"),
    [
        ("crash", "the environment raised RuntimeError: tiny env crashed on purpose", False),
        ("die", "the environment process died during step", True),
        ("hang", "the environment did not answer within 1 s", False),
    ],
)
def test_a_broken_environment_ends_the_episode_or_is_missing_and_its_process_is_killed(
    action: str, says: str, missing: bool
) -> None:
    """A step that raises or hangs on the reply's action is the episode's end, scored as it
    stands (0 here), with the reason; a process that dies is missing data. Either way the
    process is replaced."""
    task = EnvironmentTask(TINY, {"traps": True}, n_train=2, n_val=1, n_test=1, step_timeout=1.0)
    first, second = task.load_split("train")

    pids: set[int] = set()

    def bad(request: ChatRequest) -> str:
        pids.update(p.proc.pid for p in task.pool.processes)
        return action

    async def run() -> tuple[Trajectory, Trajectory]:
        started = time.monotonic()
        broken = await task.rollout(first, "", FunctionBackend(bad))
        assert time.monotonic() - started < 10
        fine = await task.rollout(second, "", FunctionBackend(solver))
        return broken, fine

    try:
        broken, fine = asyncio.run(run())
    finally:
        task.close()
    assert broken.error is not None and says in broken.error, broken.error
    assert not broken.score.passed and broken.score.value == 0.0
    if missing:
        assert broken.infra_error == broken.error
    else:
        assert broken.infra_error is None
        assert f"{says.removeprefix('the environment ')} on the action {action!r} at step 1" in (
            broken.score.feedback
        ), broken.score.feedback
    assert fine.score.passed and fine.infra_error is None  # a fresh process took over
    assert len(pids) == 1 and wait_dead(pids.pop())


def test_processes_are_reused_across_episodes_and_closed_with_the_task() -> None:
    task = EnvironmentTask(TINY, n_train=4, n_val=1, n_test=1)

    async def run() -> set[int]:
        pids = set()
        for item in task.load_split("train"):
            await task.rollout(item, "", FunctionBackend(solver))
            pids |= {p.proc.pid for p in task.pool.processes}
        return pids

    pids = asyncio.run(run())
    assert len(pids) == 1
    task.close()
    assert all(wait_dead(p) for p in pids)


def test_hostile_observations_are_bounded_and_a_plain_class_in_a_file_plugs_in(
    tmp_path: Path,
) -> None:
    (tmp_path / "loud.py").write_text(
        "class Loud:\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        print('noise on stdout')\n"
        "        return '\\u202e' + 'x' * 2_000_000, {'valid_actions': ['go'] * 5000}\n"
        "    def step(self, action):\n"
        "        obs = action[:5] + '\\udc80' + 'y' * 3_000_000\n"
        "        return obs, 10.0, True, False, {'nested': [[[[]]]] * 1000}\n",
        encoding="utf-8",
    )
    task = load_task(
        "environment",
        {"env": "loud.py:Loud", "n_train": 1, "n_val": 1, "n_test": 1, "max_reward": 20},
        base_dir=tmp_path,
    )
    assert isinstance(task, EnvironmentTask)
    (t,) = asyncio.run(play_all(task, "train", lambda r: "go\ud800 " * 10_000))
    assert t.infra_error is None and t.score.value == 0.5  # reward 10 of max_reward 20
    assert all(len(m.content) < 2000 for m in t.messages)
    step = next(s for s in t.steps if s["type"] == "env_step")
    assert len(step["action"]) <= 120 and len(step["valid_actions"]) <= 200
    # any text crosses the pipe, made valid UTF-8 on arrival (lone surrogates: U+FFFD)
    assert step["observation"].startswith("go\ufffd g\ufffdyyy")


def test_an_environment_that_cannot_be_built_is_an_infra_error(tmp_path: Path) -> None:
    task = EnvironmentTask("missing_module_xyz:Env", n_train=1, n_val=1, n_test=1)
    (t,) = asyncio.run(play_all(task, "train", lambda r: "look"))
    assert t.infra_error and "cannot import module 'missing_module_xyz'" in t.infra_error


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="actions must be 'free' or 'listed'"):
        EnvironmentTask(TINY, actions="menu")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="reset_options has keys"):
        EnvironmentTask(TINY, reset_options={"dev": {}})


@pytest.mark.parametrize(
    ("reply", "action"),
    [
        ("read instructions book", "read instructions book"),
        ("Action: take papaya.\nI will now...", "take papaya"),
        ("```\n> open   the door\n```", "open the door"),
        ('"look around"', "look around"),
        ("1. go north", "go north"),
        ("\n\n  \n", ""),
        ("x" * 500, "x" * 120),
    ],
)
def test_parse_action_reads_the_first_line_robustly(reply: str, action: str) -> None:
    assert parse_action(reply) == action


def test_a_gymnasium_env_subclass_in_a_file_plugs_in_without_an_adapter(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium", reason="install with: pip install 'skillgrad[env]'")
    (tmp_path / "echo_env.py").write_text(
        "import gymnasium\n"
        "from gymnasium.spaces import Text\n\n"
        "class EchoEnv(gymnasium.Env):\n"
        "    observation_space = Text(200)\n"
        "    action_space = Text(200)\n\n"
        "    def __init__(self, word='hello'):\n"
        "        self.word = word\n\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        super().reset(seed=seed)\n"
        "        return f'Say {self.word}.', {'task': 'Echo the word.'}\n\n"
        "    def step(self, action):\n"
        "        ok = action == self.word\n"
        "        return ('Yes.' if ok else 'No.'), float(ok), ok, False, {}\n",
        encoding="utf-8",
    )
    options = {"env": "echo_env.py:EchoEnv", "env_options": {"word": "kiwi"}, "max_steps": 3}
    task = load_task("environment", {**options, "n_train": 1, "n_val": 1, "n_test": 1}, tmp_path)
    assert isinstance(task, EnvironmentTask)
    replies = iter(["banana", "kiwi"])
    (t,) = asyncio.run(play_all(task, "train", lambda r: next(replies)))
    assert t.score.passed and t.score.feedback == "solved in 2 steps (score 1.00)"
    assert t.messages[0].content.startswith("Echo the word.\n\nSay kiwi.")


def test_info_keys_of_common_environments_are_read_through_their_aliases() -> None:
    info = {
        "admissible_commands": ["go east", 7],
        "taskDescription": "Find it.",
        "walkthrough": ["go east", "take it"],
        "won": True,
        "score": 5,
        "max_score": 10,
    }
    assert canonical_info(info, 100) == {
        "valid_actions": ["go east", "7"],
        "task": "Find it.",
        "gold_actions": ["go east", "take it"],
        "success": True,
        "score": 0.5,
    }
    assert canonical_info({"score": float("nan"), "valid": "not a list"}, 100) == {}
    assert canonical_info(["not", "a", "mapping"], 100) == {}


def test_a_cut_list_of_valid_actions_never_calls_an_accepted_action_invalid(
    tmp_path: Path,
) -> None:
    (tmp_path / "many.py").write_text(
        "ACTIONS = sorted(['connect %d to %d' % (i, j) for i in range(30) for j in range(30)])\n"
        "class Many:\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        return 'a room', {'valid_actions': ACTIONS + ['look around']}\n"
        "    def step(self, action):\n"
        "        return 'you look', 1.0, True, False, {'valid_actions': ['look around']}\n",
        encoding="utf-8",
    )
    assert canonical_info({"valid": ["a"] * 201}, 100)["valid_actions_total"] == 201
    task = load_task(
        "environment", {"env": "many.py:Many", "n_train": 1, "n_val": 1, "n_test": 1},
        base_dir=tmp_path,
    )  # fmt: skip
    assert isinstance(task, EnvironmentTask)
    (t,) = asyncio.run(play_all(task, "train", lambda r: "look around"))
    step = next(s for s in t.steps if s["type"] == "env_step")
    assert len(step["valid_actions"]) == 200 and "look around" not in step["valid_actions"]
    assert step["valid"] is None  # unknown, not "rejected": the list was cut
    assert "not commands the environment accepts" not in t.score.feedback


def test_a_failed_train_episode_keeps_what_the_game_answers_to_its_gold_commands() -> None:
    # the gold sequence replayed from the same reset: the observations a worked example shows
    task = EnvironmentTask(TINY, n_train=2, n_val=1, n_test=1, max_steps=2)
    failed = asyncio.run(play_all(task, "train", lambda r: "look"))
    val = asyncio.run(play_all(task, "val", lambda r: "look"))
    whole = EnvironmentTask(TINY, n_train=2, n_val=1, n_test=1)  # the same episodes, played out
    solved = asyncio.run(play_all(whole, "train", solver))
    for t, s in zip(failed, solved, strict=True):
        (gold,) = [x for x in t.steps if x["type"] == "env_gold"]
        seen = [x["observation"] for x in s.steps if x["type"] == "env_step"]
        assert t.item_id == s.item_id and gold["observations"] == seen and len(seen) == 3
        assert not t.score.passed and t.score.feedback.startswith("step limit reached")
    assert not any(x["type"] == "env_gold" for t in (*val, *solved) for x in t.steps)


def test_loop_erased_drops_the_commands_that_came_back_to_an_observation_already_shown() -> None:
    acts = ["look", "south", "north", "south", "north", "east", "take coin"]
    seen = ["hall", "cellar", "hall", "cellar", "hall", "attic", "got it"]
    assert loop_erased(acts, seen, "start") == ["look", "east", "take coin"]
    # a look (the observation just shown, again) is no detour, also when the walk comes back
    assert loop_erased(acts, seen, "hall") == ["look", "east", "take coin"]
    assert loop_erased(["look", "look"], ["s", "s"], "s") == ["look", "look"]
    # back to the start itself; a loop inside a loop; nothing repeated
    assert loop_erased(["a", "b", "c"], ["x", "start", "y"], "start") == ["c"]
    assert loop_erased(["a", "b", "c", "d", "e"], ["x", "y", "x", "s", "z"], "s") == ["e"]
    assert loop_erased(["a", "b"], ["x", "y"], "s") == ["a", "b"]


def test_repeated_looks_go_only_when_asked_and_shortcuts_try_the_shortest_first() -> None:
    acts = ["look", "look", "east", "look", "look", "west", "east", "take coin"]
    seen = ["hall", "hall", "attic", "attic", "attic", "hall", "attic", "got it"]
    # back in the hall: the looks in the attic went with the loop
    assert loop_erased(acts, seen, "hall") == ["look", "look", "east", "take coin"]
    assert loop_erased(acts, seen, "hall", repeats=True) == ["look", "east", "take coin"]
    assert loop_erased(acts[:5], seen[:5], "hall", repeats=True) == ["look", "east", "look"]
    # a different command answered the same is still a look; the same command answered
    # differently is a step
    assert loop_erased(["x", "y", "y"], ["s", "s", "t"], "s", repeats=True) == ["x", "y", "y"]
    assert shortcuts(acts, seen, "hall") == [
        ["look", "east", "take coin"],
        ["look", "look", "east", "take coin"],
    ]
    # only the repeats can go, or nothing is shorter
    assert shortcuts(["press"] * 3, ["Click."] * 2 + ["Open."], "A button.") == [["press", "press"]]
    assert shortcuts(["a", "b"], ["x", "y"], "s") == []


_CORRIDOR = (
    "ROOMS = ['hall', 'cellar', 'attic']\n"
    "class Corridor:\n"
    "    # walk east to the attic and take the coin; the gold is a search that walks back\n"
    "    def reset(self, *, seed=None, options=None):\n"
    "        self.at, self.done = 0, False\n"
    "        gold = ['east', 'west', 'east', 'west', 'east', 'east', 'take coin']\n"
    "        return 'In the hall.', {'gold_actions': gold, 'valid_actions': self.valid()}\n"
    "    def valid(self):\n"
    "        return ['east', 'west', 'take coin']\n"
    "    def step(self, action):\n"
    "        if action == 'east': self.at = min(2, self.at + 1)\n"
    "        if action == 'west': self.at = max(0, self.at - 1)\n"
    "        if action == 'take coin' and self.at == 2: self.done = True\n"
    "        obs = 'You win.' if self.done else 'In the %s.' % ROOMS[self.at]\n"
    "        return obs, float(self.done), self.done, False, {'success': self.done,\n"
    "                                                        'valid_actions': self.valid()}\n"
)
_BUTTON = (
    "class Button:\n"
    "    # three presses open the door; every press looks the same (hidden state moves on)\n"
    "    def reset(self, *, seed=None, options=None):\n"
    "        self.n = 0\n"
    "        return 'A button.', {'gold_actions': ['press'] * 3, 'valid_actions': ['press']}\n"
    "    def step(self, action):\n"
    "        self.n += action == 'press'\n"
    "        done = self.n >= 3\n"
    "        return ('Open.' if done else 'Click.'), float(done), done, False, {'success': done}\n"
)


def test_a_gold_search_that_walks_back_is_shown_without_its_detours_only_when_that_solves(
    tmp_path: Path,
) -> None:
    (tmp_path / "corridor.py").write_text(_CORRIDOR, encoding="utf-8")
    (tmp_path / "button.py").write_text(_BUTTON, encoding="utf-8")
    sizes = {"n_train": 1, "n_val": 1, "n_test": 1, "max_steps": 1}
    corridor = load_task("environment", {"env": "corridor.py:Corridor", **sizes}, base_dir=tmp_path)
    button = load_task("environment", {"env": "button.py:Button", **sizes}, base_dir=tmp_path)
    assert isinstance(corridor, EnvironmentTask) and isinstance(button, EnvironmentTask)
    (walk,) = asyncio.run(play_all(corridor, "train", lambda r: "west"))
    (gold,) = [x for x in walk.steps if x["type"] == "env_gold"]
    assert walk.reference == ["east", "east", "take coin"] and gold["detours_cut"] == 4
    assert gold["observations"] == ["In the cellar.", "In the attic.", "You win."]
    # the same observation after each press, but the shorter sequence does not open the door:
    # the gold sequence stays as given
    (press,) = asyncio.run(play_all(button, "train", lambda r: "wait"))
    (gold,) = [x for x in press.steps if x["type"] == "env_gold"]
    assert press.reference == ["press"] * 3 and "detours_cut" not in gold
    assert gold["observations"] == ["Click.", "Click.", "Open."]


def test_a_passing_train_episode_that_searched_is_shown_by_its_path_without_detours(
    tmp_path: Path,
) -> None:
    """The target's own pass (exploration's above all) walks back and forth; the rollout replays
    it without its detours and repeated looks, and a worked example shows that path with the
    answers it got. Val and test episodes are never replayed; a shorter path that no longer
    solves (the button: every press looks the same) leaves the pass as played."""
    (tmp_path / "corridor.py").write_text(_CORRIDOR, encoding="utf-8")
    (tmp_path / "button.py").write_text(_BUTTON, encoding="utf-8")
    sizes = {"n_train": 1, "n_val": 1, "n_test": 1, "max_steps": 10, "use_gold": False}

    def task(env: str) -> EnvironmentTask:
        loaded = load_task("environment", {"env": env, **sizes}, base_dir=tmp_path)
        assert isinstance(loaded, EnvironmentTask)
        return loaded

    def scripted(*commands: str) -> object:
        replies = iter(commands)
        return lambda request: next(replies)

    walk = ["look", "look", "east", "west", "east", "east", "look", "take coin"]
    (found,) = asyncio.run(play_all(task("corridor.py:Corridor"), "train", scripted(*walk)))
    assert found.score.passed and found.reference is None
    (short,) = [x for x in found.steps if x["type"] == "env_short"]
    assert short["actions"] == ["look", "east", "east", "look", "take coin"]
    assert short["detours_cut"] == 3
    assert short["observations"] == [
        "In the hall.", "In the cellar.", "In the attic.", "In the attic.", "You win."
    ]  # fmt: skip
    assert episode_actions(found) == "\n".join(short["actions"])
    shown = render_observed_episode(found, "\n".join(short["actions"]), 200)
    assert shown.count("Action:") == 5 and "Action: west" not in shown
    assert "Observation: In the cellar.\nAction: east\nObservation: In the attic." in shown
    optimizer = view_of(found).for_optimizer(found, "", found.score.feedback, True, 2000)
    assert "without its detours (replayed, it still solves): look | east | east | look" in optimizer
    # the same search on a val episode is scored as played, never replayed
    (val,) = asyncio.run(play_all(task("corridor.py:Corridor"), "val", scripted(*walk)))
    assert val.score.passed and not any(x["type"] == "env_short" for x in val.steps)
    assert episode_actions(val) == "\n".join(walk)
    presses = ["press", "press", "press"]
    (button,) = asyncio.run(play_all(task("button.py:Button"), "train", scripted(*presses)))
    assert button.score.passed and not any(x["type"] == "env_short" for x in button.steps)
    assert episode_actions(button) == "\n".join(presses)


def test_a_damaged_short_path_is_ignored_and_the_pass_is_shown_as_played() -> None:
    reset = {"type": "env_reset", "task": "Win.", "observation": "Hall"}
    step = {"type": "env_step", "step": 1, "action": "east", "observation": "You win."}
    base = Trajectory("t", "h", (), "east", Score(1.0, True, "solved"))
    for short in (
        {"type": "env_short", "actions": ["a", "b"], "observations": ["x"]},
        {"type": "env_short", "actions": "east", "observations": "You win."},
        {"type": "env_short", "actions": [1], "observations": [{"o": 1}]},
        {"type": "env_short", "actions": [], "observations": []},
        {"type": "env_short"},
    ):
        t = dataclasses.replace(base, steps=(reset, step, short))
        assert episode_actions(t) == "east"
        assert render_observed_episode(t, "east", 200).endswith("Observation: Hall\nAction: east")


def test_a_gold_sequence_that_does_not_solve_or_breaks_on_replay_leaves_the_episode_as_played(
    tmp_path: Path,
) -> None:
    (tmp_path / "fickle.py").write_text(
        "import os\n"
        "class Fickle:\n"
        "    resets = 0\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        Fickle.resets += 1\n"
        "        if seed % 2 and Fickle.resets % 2 == 0:\n"
        "            os._exit(5)  # odd seeds: the process dies on the replay's reset\n"
        "        return 'a door', {'gold_actions': ['knock'], 'valid_actions': ['knock', 'wait']}\n"
        "    def step(self, action):\n"
        "        return 'nobody comes', 0.0, False, False, {'success': False}\n",
        encoding="utf-8",
    )
    task = load_task(
        "environment", {"env": "fickle.py:Fickle", "n_train": 6, "n_val": 1, "n_test": 1,
                        "max_steps": 1}, base_dir=tmp_path,
    )  # fmt: skip
    assert isinstance(task, EnvironmentTask)
    trajs = asyncio.run(play_all(task, "train", lambda r: "wait"))
    assert {int(t.item_id.rsplit("-", 1)[1]) % 2 for t in trajs} == {0, 1}  # both kinds played
    for t in trajs:  # gold that does not solve: no observations; a broken replay: no error
        assert t.infra_error is None and t.error is None, t.error
        assert t.score.feedback.startswith("step limit reached after 1 steps")
        assert not any(x["type"] == "env_gold" for x in t.steps)


_LADDER = (
    "ROOMS = ['hall', 'cellar', 'attic', 'roof']\n"
    "class Ladder:\n"
    "    # each room further east scores a quarter; the coin on the roof wins; west goes back\n"
    "    def reset(self, *, seed=None, options=None):\n"
    "        self.at, self.done = 0, False\n"
    "        return 'In the hall.', self.info()\n"
    "    def info(self):\n"
    "        return {'valid_actions': ['east', 'west', 'look', 'take coin'],\n"
    "                'score': 1.0 if self.done else self.at / 4, 'success': self.done}\n"
    "    def step(self, action):\n"
    "        if action not in ('east', 'west', 'look', 'take coin'):\n"
    "            return 'You cannot.', 0.0, False, False, {**self.info(), 'invalid_action': 'no'}\n"
    "        if action == 'east': self.at = min(3, self.at + 1)\n"
    "        if action == 'west': self.at = max(0, self.at - 1)\n"
    "        if action == 'take coin' and self.at == 3: self.done = True\n"
    "        obs = 'You win.' if self.done else 'In the %s.' % ROOMS[self.at]\n"
    "        return obs, 0.0, self.done, False, self.info()\n"
)


def test_an_unsolved_exploration_attempt_records_its_shorter_route_to_its_highest_score(
    tmp_path: Path,
) -> None:
    """An exploration attempt (with ``routes``: train.explore_resume on) that climbed and fell
    back is replayed up to its highest score without the command the environment refused and
    without its detours; the shortest that still reaches that score is recorded for a resumed
    attempt to replay. The task's own episodes, exploration without resume, a val episode and
    an attempt that never scored record none."""
    (tmp_path / "ladder.py").write_text(_LADDER, encoding="utf-8")
    sizes = {"n_train": 1, "n_val": 1, "n_test": 1, "max_steps": 9, "use_gold": False}
    task = load_task("environment", {"env": "ladder.py:Ladder", **sizes}, base_dir=tmp_path)
    assert isinstance(task, EnvironmentTask)

    def scripted(*commands: str) -> object:
        replies = iter(commands)
        return lambda request: next(replies)

    walk = ["look", "east", "dance", "west", "east", "east", "look", "west", "west"]
    explore = task.exploration_task(routes=True)
    (climbed,) = asyncio.run(play_all(explore, "train", scripted(*walk)))
    assert not climbed.score.passed and climbed.score.value == 0.0
    (route,) = [x for x in climbed.steps if x["type"] == "env_route"]
    assert route == {
        "type": "env_route", "actions": ["look", "east", "east"], "score": 0.5, "detours_cut": 3,
    }  # fmt: skip
    assert peak_route(episode_steps(climbed.steps)) == ["look", "east", "east"]
    # the search that first got there, without the refused command only, when no detour is cut
    straight = ["east", "dance", "east", "west", "west"] + ["look"] * 4
    (refused,) = asyncio.run(play_all(explore, "train", scripted(*straight)))
    assert peak_route(episode_steps(refused.steps)) == ["east", "east"]
    for split, play_task, commands in (
        ("train", task, walk),  # the task's own episode: no exploration, no route
        ("train", task.exploration_task(), walk),  # no resume (no routes): none recorded
        ("val", explore, walk),
        ("train", explore, ["west", "look"] * 4 + ["west"]),  # never scored
    ):
        (t,) = asyncio.run(play_all(play_task, split, scripted(*commands)))
        assert not any(x["type"] == "env_route" for x in t.steps), (split, commands)
    for damaged in (
        {"type": "env_route", "actions": "east", "score": 0.5},
        {"type": "env_route", "actions": [], "score": 0.5},
        {"type": "env_route", "actions": ["east", 3]},
        {"type": "env_route"},
    ):
        assert peak_route(episode_steps([damaged])) is None


def test_a_route_replay_that_breaks_leaves_the_attempt_as_played(tmp_path: Path) -> None:
    """The environment process dies on the route's replay (its second reset): the attempt
    stands as played, with no route and no error, and the next episode gets a new process."""
    dying = _LADDER + (
        "import os\n"
        "class Dying(Ladder):\n"
        "    resets = 0\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        Dying.resets += 1\n"
        "        if Dying.resets > 1:\n"
        "            os._exit(5)\n"
        "        return super().reset(seed=seed, options=options)\n"
    )
    (tmp_path / "dying.py").write_text(dying, encoding="utf-8")
    sizes = {"n_train": 2, "n_val": 1, "n_test": 1, "max_steps": 4, "use_gold": False}
    task = load_task("environment", {"env": "dying.py:Dying", **sizes}, base_dir=tmp_path)
    assert isinstance(task, EnvironmentTask)
    walk = ["east", "dance", "east", "west"]
    explore = task.exploration_task(routes=True)
    trajs = asyncio.run(play_all(explore, "train", lambda r: walk[_turns(r)]))
    for t in trajs:
        assert t.error is None and t.infra_error is None, t.error
        assert t.score.value == 0.25 and not t.score.passed
        assert [s.action for s in env_steps(t.steps)] == walk
        assert not any(x["type"] == "env_route" for x in t.steps)
    # the same walk where the process lives: its route is recorded
    ladder = load_task("environment", {"env": "dying.py:Ladder", **sizes}, base_dir=tmp_path)
    assert isinstance(ladder, EnvironmentTask)
    explore = ladder.exploration_task(routes=True)
    lived = asyncio.run(play_all(explore, "train", lambda r: walk[_turns(r)]))
    assert all(peak_route(episode_steps(t.steps)) == ["east", "east"] for t in lived)


def _turns(request: ChatRequest) -> int:
    return sum(m.role == "assistant" for m in request.messages)


def test_a_resumed_attempts_replayed_turns_go_without_the_list_of_actions(
    tmp_path: Path,
) -> None:
    """An exploration attempt that replays 2 commands shows the valid actions from the turn
    the target takes over; the replayed turns show only the observations."""
    (tmp_path / "ladder.py").write_text(_LADDER, encoding="utf-8")
    sizes = {"n_train": 1, "n_val": 1, "n_test": 1, "max_steps": 2, "use_gold": False}
    task = load_task("environment", {"env": "ladder.py:Ladder", **sizes}, base_dir=tmp_path)
    assert isinstance(task, EnvironmentTask)
    seen: list[ChatRequest] = []

    def player(request: ChatRequest) -> str:
        seen.append(request)
        return "east"

    (t,) = asyncio.run(play_all(task.exploration_task(replayed=2), "train", player))
    assert len(seen) == 4 and len(env_steps(t.steps)) == 4  # 2 replayed + max_steps of its own
    users = [m.content for m in seen[-1].messages if m.role == "user"]
    assert ["Valid actions:" in u for u in users] == [False, False, True, True]
    assert "In the hall." in users[0] and "In the cellar." in users[1]
    (listed,) = asyncio.run(play_all(task.exploration_task(), "train", player))
    assert all("Valid actions:" in m.content for m in listed.messages if m.role == "user")
