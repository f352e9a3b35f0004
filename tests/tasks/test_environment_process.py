"""What an environment process gets and what it leaves, in real environment processes: numpy
rewards, scores and successes are read; a step that timed out gets its ``close()`` before the
kill; the process's output is kept bounded (its tail); the run's secrets are not in its
environment variables unless ``pass_env`` names them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fakes_env_hostile import play
from skillgrad.redact import remember_secret
from skillgrad.tasks.env_child import LOG_TAIL_BYTES, child_environment
from skillgrad.tasks.env_pool import EnvProcess
from skillgrad.tasks.environment import EnvironmentTask
from skillgrad.testing import FunctionBackend, user_text
from skillgrad.types import ChatRequest, Trajectory

HOSTILE = str(Path(__file__).parents[1] / "fakes_env_hostile.py")


def one_episode(task: EnvironmentTask, reply: object, split: str = "train") -> Trajectory:
    async def go() -> Trajectory:
        item = task.load_split(split)[0]  # type: ignore[arg-type]
        return await task.rollout(item, "", FunctionBackend(reply))  # type: ignore[arg-type]

    try:
        return asyncio.run(go())
    finally:
        task.close()


def solver(request: ChatRequest) -> str:
    return play(user_text(request))


@pytest.mark.parametrize("kind", ["reward", "score"])
def test_numpy_rewards_scores_and_successes_are_read(kind: str) -> None:
    """``numpy.float32`` rewards (with a ``numpy.bool_`` success), or a ``numpy.int64`` info
    score over a ``numpy.int64`` max_score: a solved episode scores 1 and passes."""
    task = EnvironmentTask(f"{HOSTILE}:NumpyEnv", {"kind": kind}, n_train=1, n_val=1, n_test=1)
    t = one_episode(task, solver)
    assert t.infra_error is None and t.error is None
    assert (t.score.value, t.score.passed) == (1.0, True), t.score.feedback
    steps = [s for s in t.steps if s["type"] == "env_step"]
    assert [round(s["score"], 3) for s in steps] == [0.333, 0.667, 1.0]


def test_a_step_that_timed_out_gets_its_close_before_the_kill(tmp_path: Path) -> None:
    marker = tmp_path / "closed"
    task = EnvironmentTask(
        f"{HOSTILE}:ClosingEnv",
        {"marker": str(marker)},
        n_train=1,
        n_val=1,
        n_test=1,
        step_timeout=1.0,
    )
    t = one_episode(task, lambda request: "hang")
    assert t.infra_error is None and t.error is not None
    assert "did not answer within 1 s on the action 'hang'" in t.error
    assert marker.read_text() == "closed"  # close() ran: helpers it started can be stopped


def test_an_environments_output_is_kept_as_a_bounded_tail() -> None:
    """ChattyEnv prints 4 MB at every reset, then its last words before dying: the run keeps
    the last 64 KiB, enough to name the failure."""
    task = EnvironmentTask(f"{HOSTILE}:ChattyEnv", n_train=1, n_val=1, n_test=1)
    seen: list[EnvProcess] = []

    def die(request: ChatRequest) -> str:
        seen.extend(task.pool.processes)
        return "die"

    t = one_episode(task, die)
    assert t.infra_error is not None and "chatty env: last words" in t.infra_error
    (process,) = seen
    assert len(process.log.kept) <= LOG_TAIL_BYTES
    assert process.log.dropped >= 4_000_000 - LOG_TAIL_BYTES


def test_the_runs_secrets_stay_out_of_the_environment_unless_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = {
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "MY_SERVICE_TOKEN": "token-0123456789",
        "DB_PASSWORD": "hunter2hunter2",
        "SKILLGRAD_PLAIN": "plain-value",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    task = EnvironmentTask(
        f"{HOSTILE}:EnvironEnv", n_train=1, n_val=1, n_test=1, pass_env=["MY_SERVICE_TOKEN"]
    )
    t = one_episode(task, lambda request: "look")
    start = str(t.steps[0]["observation"])
    assert "OPENAI_API_KEY=- " in start and "DB_PASSWORD=- " in start
    assert "MY_SERVICE_TOKEN=token-0123456789" in start  # named in pass_env
    assert "SKILLGRAD_PLAIN=plain-value" in start


def test_which_variables_look_secret() -> None:
    remember_secret("a-key-read-from-a-custom-variable")
    base = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "PYTHONPATH": "src",
        "LANG": "C.UTF-8",
        "JAVA_HOME": "/usr/lib/jvm",
        "HF_TOKEN": "x" * 12,
        "GITHUB_TOKEN": "x" * 12,
        "AWS_SECRET_ACCESS_KEY": "x" * 12,
        "AWS_ACCESS_KEY_ID": "x" * 12,
        "ANTHROPIC_API_KEY": "x" * 12,
        "my_llm_apikey": "x" * 12,
        "PGPASSWORD": "x" * 12,
        "GOOGLE_APPLICATION_CREDENTIALS": "/keys.json",
        "MY_LLM_CRED": "a-key-read-from-a-custom-variable",  # a config's api_key_env
    }
    kept = child_environment(base=base)
    assert sorted(kept) == ["HOME", "JAVA_HOME", "LANG", "PATH", "PYTHONPATH"]
    assert "HF_TOKEN" in child_environment(["HF_TOKEN"], base=base)


@pytest.mark.parametrize("reply", ["look", "solve"])
def test_nan_infinite_huge_and_text_rewards_still_score_within_0_and_1(reply: str) -> None:
    task = EnvironmentTask(f"{HOSTILE}:WildNumbersEnv", n_train=1, n_val=1, n_test=1)
    t = one_episode(task, solver if reply == "solve" else (lambda request: reply))
    assert t.infra_error is None and 0.0 <= t.score.value <= 1.0
    steps = [s for s in t.steps if s["type"] == "env_step"]
    assert steps and all(0.0 <= s["score"] <= 1.0 for s in steps)
    assert all(isinstance(s["reward"], float) for s in steps)
