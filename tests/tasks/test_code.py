"""Code rollout: tolerant extraction, sandboxed tests, fraction-of-tests score, and the sandbox's
reason (timeout, blocked network, exception) in the trajectory for the optimizer."""

from __future__ import annotations

import json

import pytest

from skillgrad.errors import TransientModelError
from skillgrad.tasks.code import CodeTask, extract_code
from skillgrad.testing import FunctionBackend
from skillgrad.types import ChatRequest, Item, Trajectory, to_json

pytestmark = pytest.mark.slow

GOOD = "def evens(xs):\n    return sum(x for x in xs if x % 2 == 0)\n"


class EvensTask(CodeTask):
    name = "evens"
    timeout_s = 4.0

    def load_split(self, split: object) -> list[Item]:
        return [Item(id="e-0", input="sum of evens", reference="HIDDEN-TESTS")]

    def prompt(self, item: Item) -> str:
        return "Write `evens(xs)` returning the sum of the even numbers in xs."

    def tests(self, item: Item) -> str:
        return (
            "assert evens([1, 2, 3, 4]) == 6\n"
            "assert evens([]) == 0\n"
            "assert evens([5]) == 0\n"
            "assert evens([-2, 2]) == 0\n"
        )

    def entry_point(self, item: Item) -> str:
        return "evens"


ITEM = Item(id="e-0", input="sum of evens", reference="HIDDEN-TESTS")


def test_extract_code_from_fences_and_prose() -> None:
    assert extract_code(f"Here you go:\n```python\n{GOOD}```\nDone.") == GOOD.strip("\n")
    assert extract_code(f"```\n{GOOD}```") == GOOD.strip("\n")
    assert extract_code(f"```python\n{GOOD}") == GOOD.strip("\n")  # unclosed (truncated reply)
    assert extract_code(f"Sure! The function:\n{GOOD}") == GOOD.strip()
    two = "```python\nprint('usage')\n```\nand\n```python\n" + GOOD + "```"
    assert extract_code(two, "evens") == GOOD.strip("\n")
    assert extract_code("no code at all") == "no code at all"


async def test_correct_code_scores_one_and_steps_hold_the_sandbox_run() -> None:
    backend = FunctionBackend(lambda r: f"```python\n{GOOD}```")
    traj = await EvensTask().rollout(ITEM, "Write clean code.", backend)
    assert traj.score.value == 1.0 and traj.score.passed, traj.score.feedback
    assert [s["type"] for s in traj.steps] == ["model", "code", "sandbox"]
    sandbox = traj.steps[2]
    assert sandbox["tests_passed"] == 4 and sandbox["tests_total"] == 4
    assert sandbox["isolation"].startswith("bubblewrap+no-network")
    assert all("HIDDEN-TESTS" not in m.content for m in traj.messages)
    again = Trajectory.from_json(json.loads(json.dumps(to_json(traj))))
    assert list(again.steps) == to_json(traj.steps)


async def test_partly_wrong_code_scores_the_fraction_with_failures_in_feedback() -> None:
    wrong = "def evens(xs):\n    return sum(x for x in xs if x > 0 and x % 2 == 0)\n"
    traj = await EvensTask().rollout(ITEM, "", FunctionBackend(lambda r: wrong))
    assert traj.score.value == 0.75 and not traj.score.passed
    assert "3/4 tests passed" in traj.score.feedback
    assert "assert evens([-2, 2]) == 0: got 2, expected 0" in traj.score.feedback


async def test_timeout_reason_reaches_steps_and_feedback() -> None:
    hang = "def evens(xs):\n    while True:\n        pass\n"
    traj = await EvensTask().rollout(ITEM, "", FunctionBackend(lambda r: hang))
    assert traj.score.value == 0 and not traj.score.passed
    assert "time limit of 4s exceeded" in traj.score.feedback
    assert traj.steps[2]["timed_out"] is True


async def test_blocked_network_and_exceptions_reach_feedback() -> None:
    net = (
        "import urllib.request\n"
        "def evens(xs):\n"
        "    urllib.request.urlopen('http://127.0.0.1:9/')\n"
        "    return 0\n"
    )
    traj = await EvensTask().rollout(ITEM, "", FunctionBackend(lambda r: net))
    assert "URLError" in traj.score.feedback and traj.score.value == 0
    crash = "def evens(xs):\n    return xs[10]\n"
    traj = await EvensTask().rollout(ITEM, "", FunctionBackend(lambda r: crash))
    assert "IndexError" in traj.score.feedback and 'solution.py", line 2' in traj.score.feedback


async def test_missing_function_and_empty_reply() -> None:
    other = "def odds(xs):\n    return 0\n"
    traj = await EvensTask().rollout(ITEM, "", FunctionBackend(lambda r: other))
    assert "does not define a function named `evens`" in traj.score.feedback
    empty = await EvensTask().rollout(ITEM, "", FunctionBackend(lambda r: "  "))
    assert empty.score.value == 0 and "no code" in empty.score.feedback


async def test_model_error_is_a_failed_trajectory() -> None:
    def fail(request: ChatRequest) -> str:
        raise TransientModelError("rate limited")

    traj = await EvensTask().rollout(ITEM, "", FunctionBackend(fail))
    assert traj.error is not None and "rate limited" in traj.error and traj.score.value == 0


def test_score_is_scorer_compatible() -> None:
    task = EvensTask()
    assert task.score(f"```py\n{GOOD}```", ITEM).passed
    assert task.score("def evens(xs): return 1", ITEM).value == 0
