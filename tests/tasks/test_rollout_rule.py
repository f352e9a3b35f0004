"""One rule for every rollout kind (``skillgrad/errors.py``; issue 24, "also found by reading
the code"): a ``SystemicError`` is re-raised; a target call that outlived its retries is the
item's missing data (``infra_error``); a scorer raising on the reply is the item's score 0 with
the error. Chat, tool, code and environment rollouts (the environment's own score is the game's:
no scorer to raise); the harness rollout's scorer is covered in ``tests/harness``, its target is
an agent program, not a backend call."""

from __future__ import annotations

from typing import Any

import pytest

from skillgrad.errors import (
    BudgetExceeded,
    ConfigError,
    PermanentModelError,
    PromptTooLongError,
    SystemicError,
    SystemicFailure,
    TransientModelError,
)
from skillgrad.tasks.base import Task
from skillgrad.tasks.code import CodeTask
from skillgrad.tasks.environment import EnvironmentTask
from skillgrad.tasks.toolkit import Tool, make_tool
from skillgrad.tasks.tools import ToolTask
from skillgrad.tasks.views import view_of
from skillgrad.testing import FunctionBackend, ToyTask
from skillgrad.types import ChatRequest, Item, Score

ITEM = Item("i0", "apple", "APPLE")


class _Raises:
    """A scorer mix-in raising ``error`` (None: the task's own verdict)."""

    error: Exception | None = None

    def check(self, output: str) -> Score:
        if self.error is not None:
            raise self.error
        return Score(1.0, True, "ok")


class Chat(_Raises, ToyTask):
    def score(self, output: str, item: Item) -> Score:
        return self.check(output)


def echo(text: str) -> str:
    """Echo the text."""
    return text


class Tools(_Raises, ToolTask):
    name = "tools"

    def tools(self, item: Item) -> list[Tool]:
        return [make_tool(echo)]

    def prompt(self, item: Item) -> str:
        return str(item.input)

    def score(self, output: str, item: Item) -> Score:
        return self.check(output)


class Code(CodeTask):
    name = "code"

    def prompt(self, item: Item) -> str:
        return "Write f."

    def tests(self, item: Item) -> str:
        return "assert f() == 1"


def _task(kind: str, error: Exception | None = None) -> Any:
    if kind == "environment":
        return EnvironmentTask("skillgrad.testing:TinyEnv", n_train=1, n_val=1, n_test=1)
    task: Any = {"chat": Chat, "tools": Tools, "code": Code}[kind]()
    task.error = error
    return task


async def _rollout(task: Any, backend: FunctionBackend) -> Any:
    item = task.load_split("train")[0] if isinstance(task, EnvironmentTask) else ITEM
    try:
        return await task.rollout(item, "", backend)
    finally:
        if isinstance(task, EnvironmentTask):
            task.close()


def _failing(exc: Exception) -> FunctionBackend:
    def reply(request: ChatRequest) -> str:
        raise exc

    return FunctionBackend(reply)


def test_the_systemic_errors_are_the_ones_that_stop_a_run() -> None:
    for cls in (PermanentModelError, BudgetExceeded, ConfigError, SystemicFailure):
        assert issubclass(cls, SystemicError)
    assert not issubclass(TransientModelError, SystemicError)


@pytest.mark.parametrize("kind", ["chat", "tools", "code", "environment"])
async def test_a_target_call_that_outlived_its_retries_is_missing_data(kind: str) -> None:
    task: Task = _task(kind)
    traj = await _rollout(task, _failing(TransientModelError("503 after 4 retries")))
    assert traj.infra_error is not None and "503 after 4 retries" in traj.infra_error
    assert traj.error is not None and traj.score.value == 0.0


@pytest.mark.parametrize("kind", ["chat", "tools", "code", "environment"])
async def test_a_prompt_too_long_for_the_context_is_the_items_zero_not_the_runs_end(
    kind: str,
) -> None:
    """A call that does not fit the target's context window (the skill with the item's input,
    or an episode grown long) fails that item, scored: never missing data (a gate must see what
    a long skill costs) and never a stopped run. An episode ends there, scored as it stands."""
    assert not issubclass(PromptTooLongError, SystemicError)
    too_long = PromptTooLongError("Requested tokens (4223) exceed context window of 4096")
    if kind == "environment":
        calls: list[int] = []

        def reply(request: ChatRequest) -> str:
            calls.append(1)
            if len(calls) > 1:
                raise too_long
            return "look"

        traj = await _rollout(_task(kind), FunctionBackend(reply))
        assert traj.infra_error is None and traj.error is None and traj.score.value == 0.0
        assert "no longer fit the target's context window after 1 steps" in traj.score.feedback
        assert view_of(traj).ending(traj, False).end == "context_full"  # counted as such
        return
    traj = await _rollout(_task(kind), _failing(too_long))
    assert traj.infra_error is None and traj.score.value == 0.0
    assert traj.error is not None and "exceed context window" in traj.error


def test_a_server_saying_the_context_is_full_is_a_prompt_too_long() -> None:
    from skillgrad.models.clients import Endpoint, status_error

    ep = Endpoint("openai", "m", "http://127.0.0.1:1/v1")
    full = "This model's maximum context length is 4096 tokens. However, you requested 5000"
    assert isinstance(status_error(400, full, None, ep), PromptTooLongError)
    assert isinstance(status_error(400, "temperature must be <= 2", None, ep), PermanentModelError)


@pytest.mark.parametrize("kind", ["chat", "tools", "code", "environment"])
@pytest.mark.parametrize("exc", [PermanentModelError("401"), BudgetExceeded("max_calls")])
async def test_a_systemic_error_from_the_target_is_re_raised(kind: str, exc: Exception) -> None:
    with pytest.raises(type(exc)):
        await _rollout(_task(kind), _failing(exc))


@pytest.mark.parametrize("kind", ["chat", "tools"])
async def test_a_scorer_raising_on_the_reply_is_the_items_score(kind: str) -> None:
    task = _task(kind, TypeError("unhashable type: 'list'"))
    answer = FunctionBackend(lambda r: "FINAL: APPLE" if kind == "tools" else "APPLE")
    traj = await task.rollout(ITEM, "", answer)
    assert traj.infra_error is None and traj.score.value == 0.0
    assert traj.score.feedback.startswith("error: scorer raised TypeError: unhashable type")
    assert traj.error is not None and traj.error.startswith("scorer raised TypeError")


@pytest.mark.parametrize("kind", ["chat", "tools"])
async def test_a_systemic_error_from_the_scorer_is_re_raised(kind: str) -> None:
    task = _task(kind, BudgetExceeded("the judge's call would cross max_calls"))
    answer = FunctionBackend(lambda r: "FINAL: APPLE" if kind == "tools" else "APPLE")
    with pytest.raises(BudgetExceeded):
        await task.rollout(ITEM, "", answer)
