"""An episode renders exactly as before its steps were typed: for the TinyEnv episodes and the
edited copies in ``tests/fixtures/episode_views`` and for every episode of the c28278c run
directory (its steps' trajectories and its result cache), the optimizer's view, the retry's
view, the feedback and the worked examples equal what the code of commit 30cdf92 rendered
(``make_views.py`` wrote ``expected.json`` with it); and the rollout writes the same steps. An
agent-harness rollout and a tool-call trajectory render exactly as the code of commit d6c471c
rendered them, before their views moved into ``tasks/`` (``make_rollout_views.py`` wrote
``rollouts.json``)."""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from skillgrad.skill.document import approx_tokens
from skillgrad.tasks.episode import episode_feedback
from skillgrad.train import examples
from skillgrad.train.explore import attempt_view
from skillgrad.train.reflect import render_trajectories
from skillgrad.types import Trajectory, to_json

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "episode_views"
EXPECTED: dict[str, Any] = json.loads((HERE / "expected.json").read_text())
TINY: dict[str, Any] = json.loads((HERE / "tinyenv.json").read_text())


ROLLOUTS: dict[str, Any] = json.loads((HERE / "rollouts.json").read_text())


@cache
def maker(name: str = "make_views") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def trajectories() -> dict[str, Trajectory]:
    tiny = {f"tinyenv:{k}": Trajectory.from_json(d) for k, d in TINY.items()}
    stored = {f"old_run:{k}": t for k, t in maker().stored().items()}
    return tiny | stored


def views(t: Trajectory) -> dict[str, Any]:
    """The renderings ``make_views.views`` took with the old code, through today's API."""
    reply = examples.example_reply(t, None, None)
    renders = examples._renderers(t)
    return {
        "kind": examples.trajectory_kind(t),
        "reflect": render_trajectories([t]),
        "reflect_hidden": render_trajectories([t], 300, False),
        "retry": attempt_view(t, True),
        "retry_hidden": attempt_view(t, False),
        "feedback": {
            end: episode_feedback(t.steps, t.score.value, t.score.passed, end)
            for end in maker().ENDS
        },
        "example_reply": reply,
        "examples": [[r(t, reply, n) for n in maker().LIMITS] for r in renders] if reply else [],
        "fit": [examples._fit(t, reply, b, approx_tokens) for b in maker().BUDGETS]
        if reply
        else [],
    }


@pytest.mark.parametrize("source", [k for k in EXPECTED if k != "all_together"])
def test_every_rendering_of_an_episode_is_unchanged(source: str) -> None:
    assert views(trajectories()[source]) == EXPECTED[source]


def test_the_optimizers_view_of_all_episodes_together_is_unchanged() -> None:
    every = list(trajectories().values())
    assert len(every) == len(EXPECTED) - 1
    assert render_trajectories(every) == EXPECTED["all_together"]["reflect"]


ENDED = {"solved": "terminated", "crash": "failed"}
"""How the TinyEnv episodes ended (``env_end``); the others ran out of steps."""


def test_the_rollout_writes_the_steps_it_wrote_before() -> None:
    """The same steps in the same key order, then one record the old code did not write: how
    the episode ended (``env_end``, last); every rendering of the episode is unchanged by it."""
    played = maker().played()
    assert set(played) <= set(TINY)
    for name, t in played.items():
        *steps, end = to_json(t)["steps"]
        assert end == {"type": "env_end", "end": ENDED.get(name, "step_limit")}, name
        assert {**to_json(t), "steps": steps} == TINY[name], name
        for new, old in zip(steps, TINY[name]["steps"], strict=True):
            assert list(new) == list(old), (name, new)  # the keys in the same order
        assert views(t) == EXPECTED[f"tinyenv:{name}"], name


@pytest.mark.parametrize("name", [k for k in ROLLOUTS if k != "all_together"])
def test_every_rendering_of_an_agent_or_tool_call_rollout_is_unchanged(name: str) -> None:
    recorded = ROLLOUTS[name]
    t = Trajectory.from_json(recorded["trajectory"])
    assert maker("make_rollout_views").views(t) == recorded["views"]


def test_the_optimizers_view_of_all_rollouts_together_is_unchanged() -> None:
    every = [
        Trajectory.from_json(v["trajectory"]) for k, v in ROLLOUTS.items() if "trajectory" in v
    ]
    assert len(every) == len(ROLLOUTS) - 1
    assert render_trajectories(every) == ROLLOUTS["all_together"]["reflect"]
