"""Exploration on the real TextWorldExpress (real package, real JVM; scripted models): with gold
off and free commands, a train episode the target fails is solved by an exploration attempt
that lists the valid actions; that attempt becomes the skill's worked example (self-found),
which shows only what the target sees at val/test, and the gate accepts it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from skillgrad.config import load_config
from skillgrad.models.context import current_context
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.testing import (
    FunctionBackend,
    optimizer_call_kind,
    request_text,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.types import ChatRequest

pytest.importorskip("textworld_express", reason="install with: pip install 'skillgrad[env]'")
if shutil.which("java") is None:  # scripts/test installs it: a missing JVM must not pass quietly
    raise RuntimeError(
        "TextWorldExpress tests need a Java runtime: apt-get install default-jre-headless"
    )


def pecking(request: ChatRequest) -> str:
    """Reads the book, does what it says, reads again."""
    said = re.search(r"task is to (take the \w+|[^.]+)", user_text(request))
    if said and "take" in said.group(1):
        return said.group(1).replace("the ", "")
    return "read instructions book"


def test_exploration_with_gold_off_finds_a_demonstration_the_gate_accepts(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, ChatRequest]] = []

    def target(request: ChatRequest) -> str:
        seen.append((current_context().stage, request))
        shown_how = "Action: read instructions book" in system_text(request)
        if "Valid actions:" in user_text(request) or shown_how:
            return pecking(request)
        return "look around"  # free commands and no demonstration: it never starts

    prompts: list[str] = []
    kinds: list[str | None] = []

    def optimizer(request: ChatRequest) -> Any:
        prompts.append(request_text(request))
        kinds.append(optimizer_call_kind(request))
        assert kinds[-1] in ("reflect", "deep_reflect", "contrast", "revise")
        return rules_reply("Read the instructions first and do what they say, one step at a time.")

    options = {"game": "peckingorder", "actions": "free", "max_steps": 12, "n_train": 2,
               "n_val": 1, "n_test": 1, "use_gold": False}  # fmt: skip
    # strict: one val episode, on which no gain passes the default paired gate
    train = {"num_epochs": 1, "steps_per_epoch": 1, "batch_size": 2, "examples": "on",
             "max_example_tokens": 200, "explore": "on", "explore_attempts": 1,
             "semantic_merge": False, "rank_with_optimizer": False, "use_slow_update": False,
             "use_meta_skill": False, "gate_rule": "strict"}  # fmt: skip
    env = {"task": "textworld_express", "options": options, "output_root": str(tmp_path)}
    cfg = load_config(data={"env": env, "train": train, "hardware": {"rollout_workers": 1}})
    result = run_training(cfg, optimizer=FunctionBackend(optimizer), target=FunctionBackend(target))
    run, s = result.run_dir, result.summary
    assert (s["val_initial"], s["val_best"], s["test_best"]) == (0.0, 1.0, 1.0)
    rows = read_jsonl(run / "steps/step_0001/exploration.jsonl")
    assert [r["passed"] for r in rows] == [True, True]
    shown = s["examples"]["best_skill"]
    assert len(shown) == 1 and shown[0]["origin"] == "self-found"
    best = (run / "best_skill.md").read_text()
    assert "Action: read instructions book" in best and "Valid actions" not in best
    # the valid actions only ever reached the target while it explored
    listed = {stage for stage, r in seen if "Valid actions:" in request_text(r)}
    assert listed == {"explore"}
    # gold off: the game generated none, and no optimizer prompt holds one
    trajs = read_jsonl(run / "steps/step_0001/trajectories.jsonl")
    assert all(t["reference"] is None for t in trajs)
    assert prompts and not any("Reference actions" in p for p in prompts)
    assert "contrast" in kinds  # each failed episode beside its passing attempt
    assert read_json(run / "history.json")[0]["explore_found"] == 2
