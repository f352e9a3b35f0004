"""The registry: tasks and scorers by entry point, by ``module:attr`` and by ``file.py:attr``, with
"did you mean" errors; and the example user task in examples/custom_task rolled out end to end."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from skillgrad.config import load_config
from skillgrad.errors import ConfigError
from skillgrad.plugins import plugin_names
from skillgrad.registry import (
    SCORER_GROUP,
    load_scorer,
    load_task,
    resolve_object,
    scorer_names,
)
from skillgrad.scorers import NumericScorer
from skillgrad.tasks.base import Task
from skillgrad.tasks.data import DataTask
from skillgrad.testing import FunctionBackend, ToyTask, system_text, user_text
from skillgrad.types import ChatRequest, Item

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "custom_task"

USER_TASK = textwrap.dedent(
    """
    from dataclasses import dataclass
    from skillgrad.tasks.chat import ChatTask
    from skillgrad.types import Item, Score

    @dataclass
    class Shout(ChatTask):
        word: str = "hi"
        base_dir: object = None
        name: str = "shout"

        def load_split(self, split):
            return [Item(f"{split}-0", self.word, self.word.upper())]

        def prompt(self, item):
            return f"Shout: {item.input}"

        def score(self, output, item):
            return Score(float(output == item.reference), output == item.reference, "")
    """
)


# -- tasks ---------------------------------------------------------------------------------------


def test_task_by_entry_point_name() -> None:
    assert "toy" in plugin_names("skillgrad.tasks")
    toy = load_task("toy", {"n_train": 3})
    assert isinstance(toy, ToyTask) and len(toy.load_split("train")) == 3


def test_task_by_module_attr_gets_base_dir(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"q": "x", "answer": "y"}\n' * 5)
    t = load_task("skillgrad.tasks.data:DataTask", {"file": "d.jsonl", "prompt": "{q}"}, tmp_path)
    assert isinstance(t, DataTask) and t.base_dir == tmp_path
    assert t.validate() == {"train": 3, "val": 1, "test": 1}


def test_task_by_file_path_is_imported_once(tmp_path: Path) -> None:
    (tmp_path / "shout.py").write_text(USER_TASK)
    first = load_task("shout.py:Shout", {"word": "hey"}, tmp_path)
    second = load_task(str(tmp_path / "shout.py") + ":Shout", {}, None)
    assert isinstance(first, Task) and type(first) is type(second)
    assert first.base_dir == tmp_path  # type: ignore[attr-defined]
    assert second.base_dir is None  # type: ignore[attr-defined]
    assert first.load_split("val")[0].reference == "HEY"


def test_task_errors_say_what_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown task 'toi'\. Did you mean 'toy'\?"):
        load_task("toi", {})
    with pytest.raises(ConfigError, match=r"unknown option 'n_trian' .*Did you mean 'n_train'"):
        load_task("toy", {"n_trian": 3})
    with pytest.raises(ConfigError, match="does not exist"):
        load_task("missing.py:Task", {}, tmp_path)
    (tmp_path / "shout.py").write_text(USER_TASK)
    with pytest.raises(ConfigError, match=r"has no attribute 'Shoot'\. Did you mean 'Shout'"):
        load_task("shout.py:Shoot", {}, tmp_path)
    (tmp_path / "broken.py").write_text("import not_a_real_module_xyz\n")
    with pytest.raises(ConfigError, match=r"importing .*broken\.py failed: ModuleNotFoundError"):
        load_task("broken.py:Task", {}, tmp_path)
    with pytest.raises(ConfigError, match="cannot import module"):
        load_task("no_such_pkg_xyz.mod:Task", {})
    with pytest.raises(ConfigError, match="did not produce a Task"):
        load_task("skillgrad.types:Usage", {})
    with pytest.raises(ConfigError, match="not of the form"):
        resolve_object("just_a_module")


# -- scorers -------------------------------------------------------------------------------------


def test_scorer_names_and_builtins() -> None:
    assert {"exact", "numeric", "llm_judge", "callable"} <= set(scorer_names())
    assert isinstance(load_scorer("numeric", {"tolerance": 0.5}), NumericScorer)
    by_path = load_scorer("skillgrad.scorers:NumericScorer", {"tolerance": 0.5})
    assert isinstance(by_path, NumericScorer) and by_path.tolerance == 0.5
    with pytest.raises(ConfigError, match=r"Did you mean 'exact'\?"):
        load_scorer("exakt")


def test_scorer_entry_point_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real installed distribution on sys.path that declares a scorer entry point.
    (tmp_path / "my_scorers.py").write_text(
        "from skillgrad.types import Score\n"
        "class Yes:\n"
        "    def __init__(self, word='yes'):\n        self.word = word\n"
        "    def score(self, output, item):\n"
        "        ok = output.strip() == self.word\n"
        "        return Score(float(ok), ok, f'wanted {self.word!r}')\n"
    )
    dist = tmp_path / "my_scorers-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-scorers\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{SCORER_GROUP}]\nyes = my_scorers:Yes\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "yes" in scorer_names()
    scorer = load_scorer("yes", {"word": "si"})
    assert scorer.score("si", Item("i", None)).passed
    with pytest.raises(ConfigError, match=r"unknown option 'wrd'.*Did you mean 'word'"):
        load_scorer("yes", {"wrd": "si"})
    sys.modules.pop("my_scorers", None)


def test_scorer_object_by_module_attr_takes_no_options(tmp_path: Path) -> None:
    (tmp_path / "obj.py").write_text(
        "from skillgrad.scorers import ExactScorer\nLOUD = ExactScorer(case_sensitive=False)\n"
    )
    scorer = load_scorer("obj.py:LOUD", {}, tmp_path)
    assert scorer.score("ABC", Item("i", None, "abc")).passed
    with pytest.raises(ConfigError, match="takes no options"):
        load_scorer("obj.py:LOUD", {"strip": False}, tmp_path)
    with pytest.raises(ConfigError, match="neither a Scorer"):
        load_scorer("skillgrad.registry:SCORER_GROUP")


# -- the example user task -----------------------------------------------------------------------


async def test_example_custom_task_loads_from_its_file_and_rolls_out() -> None:
    task = load_task(
        "examples/custom_task/my_task.py:MyTask",
        {"data_file": "examples/custom_task/data.jsonl", "tolerance": 0.01},
        REPO,
    )
    assert task.name == "unit_conversion"
    assert task.base_dir == REPO  # type: ignore[attr-defined]
    splits = {s: task.load_split(s) for s in ("train", "val", "test")}
    assert [len(v) for v in splits.values()] == [12, 6, 6]
    ids = [i.id for items in splits.values() for i in items]
    assert len(ids) == len(set(ids))
    item = next(i for i in splits["train"] if i.id == "km-m-1")

    def reply(request: ChatRequest) -> str:
        assert "3500" not in user_text(request)  # the reference never reaches the target
        return "3,500 m"

    backend = FunctionBackend(reply)
    traj = await task.rollout(item, "# Units\nMultiply carefully.", backend)
    assert system_text(backend.calls[0]) == "# Units\nMultiply carefully."
    assert (
        user_text(backend.calls[0]) == "How many metres are in 3.5 km?\nReply with the number only."
    )
    assert traj.score.passed and traj.reference == 3500
    wrong = await task.rollout(item, "", FunctionBackend(lambda r: "350"))
    assert not wrong.score.passed and "expected '3500', got '350'" in wrong.score.feedback


def test_example_configs_are_valid_and_their_options_fit() -> None:
    cfg = load_config(EXAMPLE / "config.yaml")
    assert cfg.env.task == "my_task.py:MyTask" and Path(cfg.base_dir) == EXAMPLE
    task = load_task(cfg.env.task, cfg.env.options, Path(cfg.base_dir))
    assert len(task.load_split("test")) == 6
    data_cfg = load_config(EXAMPLE / "config_data.yaml")
    assert data_cfg.env.task == "data"
    # the `data` entry point name maps to this class (pyproject's skillgrad.tasks group)
    data_task = load_task("skillgrad.tasks.data:DataTask", data_cfg.env.options, EXAMPLE)
    assert data_task.validate() == {"train": 12, "val": 6, "test": 6}  # type: ignore[attr-defined]
