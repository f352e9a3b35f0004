"""Where a failed episode and the attempt that solved it parted, as a line written by code
(``train/parting.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from skillgrad.config import load_config
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.tasks.episode import EnvReset, EnvStep
from skillgrad.testing import FunctionBackend, rules_reply
from skillgrad.train.parting import MAX_RULES, Forms, parting, parting_edits, typed
from skillgrad.train.screens.specific import EpisodeObjects
from skillgrad.types import Score, Trajectory

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_env import containers, explorer, mixed_seed


def _episode(item: str, start: str, commands: list[str], passed: bool) -> Trajectory:
    steps = [EnvReset(task="Follow the book.", observation=start).to_json()]
    for n, command in enumerate(commands, 1):
        valid = not command.startswith(("dance", "Unknown"))
        steps.append(EnvStep(step=n, reply=command, action=command, valid=valid,
                             observation="Done.").to_json())  # fmt: skip
    score = Score(1.0 if passed else 0.0, passed=passed)
    return Trajectory(item_id=item, skill_hash="s", messages=(), output="", score=score,
                      steps=tuple(steps))  # fmt: skip


def _chat(item: str) -> Trajectory:
    return Trajectory(item_id=item, skill_hash="s", messages=(), output="4",
                      score=Score(0.0, passed=False))  # fmt: skip


APPLE = "A book, an apple and a fig."
PEAR = "A book, a pear and a plum."


def test_every_typed_command_is_read_refused_ones_too() -> None:
    t = _episode("train-1", APPLE, ["dance wildly", "read book", "take  apple"], False)
    assert typed(t) == ("dance wildly", "read book", "take apple")
    assert typed(_chat("train-2")) is None  # a chat task has no commands


def test_the_first_commands_they_typed_differently_as_forms() -> None:
    objects = Forms(EpisodeObjects(frozenset({"apple", "fig", "pear", "plum"})))
    failed = _episode("train-1", APPLE, ["read book", "take apple", "take fig"], False)
    solved = _episode("train-1#x1.2", APPLE,
                      ["read book", "take apple", "read book", "take fig"], True)  # fmt: skip
    assert parting(failed, solved, objects) == ("take <object>", "read book", "take <object>")
    # parted at the first command: no command before it
    opened = _episode("train-1", APPLE, ["open the book", "take fig"], False)
    assert parting(opened, solved, objects) == (None, "read book", "open the book")
    # only the object differs: the forms are the same, nothing to say in words
    other = _episode("train-1", APPLE, ["read book", "take fig"], False)
    assert parting(other, solved, objects) is None
    # one's commands start the other's: they never parted
    short = _episode("train-1", APPLE, ["read book"], False)
    assert parting(short, solved, objects) is None and parting(solved, short, objects) is None
    assert parting(_chat("train-1"), solved, objects) is None


def test_a_command_on_a_word_every_episode_shows_is_said_as_its_general_form() -> None:
    """``grape`` is in both episodes, so it is no object of one; yet ``take <object>`` (the
    pass took a fruit only one episode shows) covers ``take grape``: the line never says it."""
    apple = "A book, an apple, a grape."
    pear = "A book, a pear, a grape."
    failed = _episode("train-1", apple, ["read book", "take apple", "take grape"], False)
    solved = _episode("train-1#x1.1", apple,
                      ["read book", "take apple", "read book", "take grape"], True)  # fmt: skip
    other = _episode("train-2", pear, ["read book", "take pear"], True)
    form = Forms.build([failed, solved, other])
    assert "grape" not in form.objects.words and form("take grape") == "take <object>"
    assert form("read book") == "read book" and form("dance") == "dance"
    assert parting(failed, solved, form) == ("take <object>", "read book", "take <object>")
    (edit,) = parting_edits([(failed, solved)], [failed, solved, other], step=1)
    assert "grape" not in edit.content and "apple" not in edit.content


def test_one_line_per_moment_the_most_shown_first_objects_as_placeholders() -> None:
    a_failed = _episode("train-1", APPLE, ["read book", "take apple", "take fig"], False)
    a_solved = _episode("train-1#x1.1", APPLE,
                        ["read book", "take apple", "read book", "take fig"], True)  # fmt: skip
    p_failed = _episode("train-2", PEAR, ["read book", "take pear", "take plum"], False)
    p_solved = _episode("train-2#x1.3", PEAR,
                        ["read book", "take pear", "read book", "take plum"], True)  # fmt: skip
    # a third pair parts at the same moment another way: the moment keeps its most shown line
    odd_failed = _episode("train-3", PEAR, ["read book", "take pear", "take plum"], False)
    odd_solved = _episode("train-3#x1.1", PEAR,
                          ["read book", "take pear", "look around", "take plum"], True)  # fmt: skip
    opened = _episode("train-4", APPLE,
                      ["Unknown action: I'm not sure what you mean"] * 3, False)  # fmt: skip
    pairs = [(a_failed, a_solved), (odd_failed, odd_solved), (p_failed, p_solved),
             (opened, a_solved)]  # fmt: skip
    shown = [a_failed, a_solved, p_failed, p_solved, odd_failed, odd_solved, opened]
    edits = parting_edits(pairs, shown, step=2)
    assert [e.content for e in edits] == [
        "- After `take <object>`, type `read book` (solved episodes did; failed ones typed "
        "`take <object>`).",
        "- Start with `read book` (solved episodes did).",  # an echo of the game is not quoted
    ]
    assert len(edits) <= MAX_RULES
    assert all(e.source == "parting" and e.op == "add" for e in edits)
    assert edits[0].trajectory_ids == ("step_0002/train-1", "step_0002/train-2")
    assert edits[1].trajectory_ids == ("step_0002/train-4",)
    assert parting_edits([], shown, step=2) == []


def _run(tmp_path: Path, name: str, parting: str, seed: int) -> Any:
    options = {"env": "skillgrad.testing:TinyEnv", "n_train": 2, "n_val": 2, "n_test": 1,
               "max_steps": 4, "use_gold": False, "seed": seed}  # fmt: skip
    train = {"num_epochs": 1, "steps_per_epoch": 1, "batch_size": 2, "explore": "on",
             "parting": parting, "semantic_merge": False, "rank_with_optimizer": False,
             "use_slow_update": False, "use_meta_skill": False, "gate_rule": "strict"}  # fmt: skip
    env = {"task": "environment", "output_root": str(tmp_path), "run_name": name,
           "options": options}  # fmt: skip
    cfg = load_config(data={"env": env, "train": train})
    optimizer = FunctionBackend(lambda r: rules_reply("Look around before you act."))
    return run_training(cfg, optimizer=optimizer, target=FunctionBackend(explorer))


def test_a_run_adds_the_line_beside_the_example_and_gates_it(tmp_path: Path) -> None:
    """TinyEnv: the failed episodes typed ``look``; the attempts that solved them (with the
    valid actions listed) opened a container first, whose name differs between episodes."""
    seed = mixed_seed()  # the two train episodes hold different containers
    result = _run(tmp_path, "on", "on", seed)
    run = result.run_dir
    candidate = (run / "steps/step_0001/candidate.md").read_text()
    line = "- Start with `open <object>` (solved episodes did; failed ones typed `look`)."
    assert line in candidate and not any(c in line for c in containers(seed))
    applied = read_json(run / "steps/step_0001/apply_report.json")
    rows = [r for r in applied if r["edit"]["source"] == "parting"]
    assert [r["status"] for r in rows] == ["applied"]
    assert len(rows[0]["edit"]["trajectory_ids"]) == 2  # both failed episodes parted there
    assert read_json(run / "history.json")[0]["accepted"]
    # off (the default): no such line
    off = _run(tmp_path, "off", "off", seed)
    assert "Start with" not in (off.run_dir / "steps/step_0001/candidate.md").read_text()
