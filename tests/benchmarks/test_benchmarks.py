"""The built-in benchmarks: seeded disjoint splits, scorers that give 1.0 on the reference and
less on wrong answers with useful feedback, and rollouts with a fake backend."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from skillgrad.benchmarks.code import FAMILIES, CodeBenchmark
from skillgrad.benchmarks.extraction import ExtractionTask
from skillgrad.benchmarks.humaneval import HumanEvalBenchmark
from skillgrad.benchmarks.tool_use import ToolUseBenchmark
from skillgrad.errors import ConfigError, DataError
from skillgrad.registry import load_task
from skillgrad.tasks.base import Task
from skillgrad.testing import FunctionBackend, user_text
from skillgrad.types import ChatRequest

BENCHMARKS: list[type[Any]] = [ExtractionTask, ToolUseBenchmark, CodeBenchmark]


@pytest.mark.parametrize("cls", BENCHMARKS)
def test_splits_are_disjoint_sized_and_deterministic(cls: type[Any]) -> None:
    task = cls(n_train=9, n_val=5, n_test=4, seed=11)
    assert isinstance(task, Task)
    splits = {s: task.load_split(s) for s in ("train", "val", "test")}
    assert [len(v) for v in splits.values()] == [9, 5, 4]
    ids = [i.id for items in splits.values() for i in items]
    assert len(ids) == len(set(ids))
    again = cls(n_train=9, n_val=5, n_test=4, seed=11)
    assert all(again.load_split(s) == items for s, items in splits.items())
    other = cls(n_train=9, n_val=5, n_test=4, seed=12)
    assert other.load_split("train") != splits["train"]
    with pytest.raises(ConfigError, match="unknown split"):
        task.load_split("dev")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "spec",
    [
        "skillgrad.benchmarks.extraction:ExtractionTask",
        "skillgrad.benchmarks.tool_use:ToolUseBenchmark",
        "skillgrad.benchmarks.code:CodeBenchmark",
    ],
)
def test_options_are_constructor_kwargs(spec: str) -> None:
    task = load_task(spec, {"n_train": 2, "n_val": 1, "n_test": 1, "seed": 4})
    assert len(task.load_split("train")) == 2
    with pytest.raises(ConfigError, match="n_trian"):
        load_task(spec, {"n_trian": 2})


def test_extraction_scorer_partial_credit_and_feedback() -> None:
    task = ExtractionTask(seed=2)
    item = task.load_split("test")[0]
    ref = item.reference
    assert task.score(json.dumps(ref), item).value == 1.0
    fenced = (
        f'Sure:\n```json\n{{"order_id": "#{ref["order_id"]}", "quantity": "{ref["quantity"]}", '
    )
    fenced += f'"city": "{ref["city"].upper()}"}}\n```'
    assert task.score(fenced, item).passed
    wrong = {**ref, "quantity": ref["quantity"] + 1}
    del wrong["city"]
    score = task.score(json.dumps(wrong), item)
    assert score.value == pytest.approx(1 / 3) and not score.passed
    assert "order_id: ok" in score.feedback
    assert f"quantity: expected {ref['quantity']}, got {ref['quantity'] + 1}" in score.feedback
    assert f"city: missing (expected {ref['city']!r})" in score.feedback
    nothing = task.score("I cannot help", item)
    assert nothing.value == 0 and "no JSON object" in nothing.feedback


def test_extraction_reference_never_in_prompt_but_text_is() -> None:
    task = ExtractionTask()
    for item in task.load_split("train"):
        prompt = task.prompt(item)
        assert item.input in prompt and "order_id" in prompt
        assert str(item.reference["quantity"]) in item.input  # the answer is extractable


async def test_extraction_rollout_with_function_backend() -> None:
    task = ExtractionTask(n_val=4)
    items = {task.prompt(i): i for i in task.load_split("val")}

    def model(request: ChatRequest) -> str:
        return json.dumps(items[user_text(request)].reference)

    for item in items.values():
        traj = await task.rollout(item, "Reply with JSON only.", FunctionBackend(model))
        assert traj.score.value == 1.0 and traj.messages[0].content == "Reply with JSON only."


@pytest.mark.slow
async def test_code_reference_solutions_pass_and_wrong_ones_do_not() -> None:
    task = CodeBenchmark(n_train=len(FAMILIES) * 2, seed=7)
    items = task.load_split("train")
    assert len({i.meta["family"] for i in items}) >= len(FAMILIES) // 2
    by_prompt = {task.prompt(i): i for i in items}

    def model(request: ChatRequest) -> str:
        return f"```python\n{by_prompt[user_text(request)].reference['solution']}```"

    for item in items:
        traj = await task.rollout(item, "", FunctionBackend(model))
        assert traj.score.value == 1.0, traj.score.feedback
        wrong = f"def {item.input['entry_point']}(arg):\n    return None\n"
        score = task.score(wrong, item)
        assert score.value < 1.0 and "FAILED" in score.feedback


def test_code_benchmark_prompt_hides_tests() -> None:
    task = CodeBenchmark()
    for item in task.load_split("val"):
        prompt = task.prompt(item)
        assert item.input["entry_point"] in prompt and "assert" not in prompt
        assert item.reference["tests"].count("assert") == 5


def test_tool_use_reference_answer_scores_one() -> None:
    task = ToolUseBenchmark(seed=9)
    for item in task.load_split("test"):
        assert task.score(f"FINAL: {item.reference}", item).value == 1.0
        assert task.score(str(item.reference + 1), item).value == 0.0


def _humaneval_file(path: Path, n: int) -> Path:
    rows = []
    for i in range(n):
        prompt = (
            f"from typing import List\n\n\ndef add_{i}(xs: List[int]) -> int:\n"
            f'    """Sum of xs plus {i}."""\n'
        )
        test = (
            "\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
            f"    assert candidate([1, 2]) == {3 + i}\n"
            f"    assert candidate([]) == {i}\n"
            "    for k in range(3):\n"
            f"        assert candidate([k]) == k + {i}\n"
        )
        rows.append(
            {
                "task_id": f"HumanEval/{i}",
                "prompt": prompt,
                "entry_point": f"add_{i}",
                "canonical_solution": f"    return sum(xs) + {i}\n",
                "test": test,
            }
        )
    file = path / "he.jsonl.gz"
    with gzip.open(file, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r) for r in rows) + "\n")
    return file


@pytest.mark.slow
async def test_humaneval_variant_from_a_humaneval_format_file(tmp_path: Path) -> None:
    file = _humaneval_file(tmp_path, 6)
    task = HumanEvalBenchmark(n_train=3, n_val=2, n_test=None, seed=1, path=str(file))
    splits = {s: task.load_split(s) for s in ("train", "val", "test")}
    assert [len(v) for v in splits.values()] == [3, 2, 1]
    ids = [i.id for v in splits.values() for i in v]
    assert sorted(ids) == sorted(f"HumanEval/{i}" for i in range(6))
    item = splits["train"][0]
    assert item.input["prompt"] in task.prompt(item) and "check" not in task.prompt(item)
    body_only = FunctionBackend(lambda r: "    return sum(xs) + " + item.id.split("/")[1])
    traj = await task.rollout(item, "", body_only)
    assert traj.score.value == 1.0, traj.score.feedback
    assert traj.steps[2]["tests_total"] == 3  # two asserts and one loop of asserts
    name = item.input["entry_point"]
    constant = item.id.split("/")[1]
    whole = f"```python\ndef {name}(xs: List[int]) -> int:\n    return {constant}\n```"
    score = task.score(whole, item)  # uses List without importing it: the header is added
    assert score.value == pytest.approx(1 / 3) and "NameError" not in score.feedback


def test_humaneval_bad_file_is_a_data_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "x", "prompt": "def f(): pass"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl, line 1: not a HumanEval problem"):
        HumanEvalBenchmark(path=str(bad)).load_split("train")
    with pytest.raises(ConfigError, match="humaneval has 3 usable items"):
        HumanEvalBenchmark(n_train=5, path=str(_humaneval_file(tmp_path, 3))).load_split("val")
    with pytest.raises(ConfigError, match=r"humaneval: env.options.seed must be an integer"):
        HumanEvalBenchmark(seed=1.5, path=str(bad))  # type: ignore[arg-type]


def test_humaneval_reads_the_pulled_data_bundle() -> None:
    """scripts/test pulls the ``humaneval`` bundle: the real 164 problems, split disjointly."""
    task = HumanEvalBenchmark(n_train=40, n_val=20, n_test=None, seed=0)
    splits = {s: [i.id for i in task.load_split(s)] for s in ("train", "val", "test")}
    assert [len(v) for v in splits.values()] == [40, 20, 104]
    assert len({i for v in splits.values() for i in v}) == 164


def test_humaneval_without_its_data_names_the_pull_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillgrad.errors import AssetError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty cache
    task = HumanEvalBenchmark(n_train=2, n_val=2, n_test=2)
    with pytest.raises(AssetError, match="skillgrad data pull humaneval"):
        task.load_split("train")
