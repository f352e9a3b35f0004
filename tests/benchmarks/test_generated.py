"""The seeded generated-task base: disjoint, stable splits from one per-item generator, shared
by every built-in benchmark and the toy task."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import pytest

from skillgrad.benchmarks.code import CodeBenchmark
from skillgrad.benchmarks.extraction import ExtractionTask
from skillgrad.benchmarks.generated import GeneratedTask, content_key, generate_splits
from skillgrad.benchmarks.quickstart import QuickstartTask
from skillgrad.benchmarks.tool_use import ToolUseBenchmark
from skillgrad.errors import ConfigError, DataError
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.testing import ToyTask
from skillgrad.types import Item


@dataclass
class Digits(GeneratedTask):
    """A generator with a tiny space (ten digits), so repeats are certain."""

    family: ClassVar[str] = "digits"
    calls: int = 0

    def make_item(self, rng: random.Random, split: Split, index: int) -> Item:
        self.calls += 1
        d = rng.randrange(10)
        return Item(id=f"{split}-{index}", input=str(d), reference=d)


def _dump(task: Any) -> dict[str, list[dict[str, Any]]]:
    return {s: [asdict(i) for i in task.load_split(s)] for s in SPLITS}


ALL = [
    QuickstartTask,
    ExtractionTask,
    ToolUseBenchmark,
    lambda **kw: CodeBenchmark(sandbox="unsandboxed", **kw),
    ToyTask,
]


@pytest.mark.parametrize("make", ALL)
def test_every_builtin_benchmark_is_generated_disjoint_and_stable(make: Any) -> None:
    task = make(seed=3)
    assert isinstance(task, GeneratedTask)
    dumped = _dump(task)
    assert dumped == _dump(make(seed=3))  # same seed, same items, on a fresh object
    assert dumped != _dump(make(seed=4))
    items = [i for s in SPLITS for i in task.load_split(s)]
    assert len({i.id for i in items}) == len(items)
    assert len({task.item_key(i) for i in items}) == len(items)  # no item in two splits
    assert [len(task.load_split(s)) for s in SPLITS] == [task.n_train, task.n_val, task.n_test]


def test_quickstart_data_is_pinned() -> None:
    """The README's quickstart numbers were measured on these items: they must not drift."""
    dumped = _dump(QuickstartTask())
    digest = hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()[:16]
    assert dumped["train"][0]["input"] == "My jacket turned out awful, start to finish."
    assert digest == "75ad30b9803bda65"


def test_repeats_are_redrawn_so_splits_are_disjoint() -> None:
    task = Digits(n_train=4, n_val=3, n_test=3)
    items = [i for s in SPLITS for i in task.load_split(s)]
    assert sorted(i.input for i in items) == [str(d) for d in range(10)]
    assert task.calls > 10  # some draws repeated and were drawn again
    assert [i.id for i in task.load_split("val")] == ["val-0", "val-1", "val-2"]


def test_a_generator_that_cannot_fill_the_splits_is_a_clear_error() -> None:
    with pytest.raises(DataError, match=r"test split.*repeated itself.*fewer items"):
        Digits(n_train=6, n_val=4, n_test=1).load_split("train")


def test_one_stream_runs_through_all_splits() -> None:
    @dataclass
    class Shared(Digits):
        one_stream: ClassVar[bool] = True

    own = random.Random(5)
    expected: list[int] = []
    while len(expected) < 6:
        d = own.randrange(10)
        if d not in expected:
            expected.append(d)
    task = Shared(n_train=2, n_val=2, n_test=2, seed=5)
    assert [i.reference for s in SPLITS for i in task.load_split(s)] == expected


def test_sizes_and_split_names_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"quickstart: env.options.n_val must be >= 1 \(got 0\)"):
        QuickstartTask(n_val=0)
    with pytest.raises(ConfigError, match=r"extraction: env.options.n_test must be >= 0"):
        ExtractionTask(n_test=-1)
    with pytest.raises(ConfigError, match="unknown split 'dev'"):
        ToyTask().load_split("dev")  # type: ignore[arg-type]


def test_returned_lists_are_copies() -> None:
    task = ToyTask()
    task.load_split("train").clear()
    assert len(task.load_split("train")) == task.n_train


def test_generate_splits_on_its_own_and_content_key() -> None:
    made = generate_splits(
        {"train": 2, "val": 1, "test": 0},
        lambda split: random.Random(split),
        lambda rng, split, i: Item(f"{split}-{i}", rng.randrange(1000), None),
    )
    assert [len(made[s]) for s in SPLITS] == [2, 1, 0]
    a, b = Item("a", "x", 1, {"m": 1}), Item("b", "x", 1, {"m": 1})
    assert content_key(a) == content_key(b) != content_key(Item("c", "x", 2, {"m": 1}))
