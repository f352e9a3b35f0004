"""A user-defined task in its own file (examples/custom_task) trains through `skillgrad train`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from skillgrad.testing import system_text, user_text
from skillgrad.types import ChatRequest

ROOT = Path(__file__).parents[2]
HERE = Path(__file__)


class ConvertingTarget:
    """Answers unit conversions correctly only once the skill says to give just the number."""

    name = "function:converter"

    async def complete(self, request: ChatRequest):  # type: ignore[no-untyped-def]
        from skillgrad.types import Completion

        question = user_text(request)
        rows = [json.loads(x) for x in (ROOT / "examples/custom_task/data.jsonl").open()]
        answer = next(r["answer"] for r in rows if r["question"] in question)
        if "only the number" in system_text(request):
            return Completion(str(answer))
        return Completion(f"I think it is about {answer * 3} or so.")


class RuleOptimizer:
    name = "function:rule-optimizer"

    async def complete(self, request: ChatRequest):  # type: ignore[no-untyped-def]
        from skillgrad.testing import rules_reply
        from skillgrad.types import Completion

        text = user_text(request)
        if "Revise the memo" in text:
            return Completion(json.dumps({"memo": "number-only rules helped"}))
        return Completion(json.dumps(rules_reply("Reply with only the number.")))


def test_user_task_file_trains_through_the_cli(tmp_path: Path) -> None:
    cmd = [
        sys.executable, "-m", "skillgrad", "train", str(ROOT / "examples/custom_task/config.yaml"),
        "--set", f"env.output_root={tmp_path}",
        "--set", f"models.optimizer={{provider: function, model: '{HERE}:RuleOptimizer'}}",
        "--set", f"models.target={{provider: function, model: '{HERE}:ConvertingTarget'}}",
        "--set", "train.use_slow_update=false", "--quiet",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "config/summary.json").read_text())
    assert summary["task"] == "my_task.py:MyTask"
    assert summary["val_initial"] < summary["val_best"] == 1.0
    assert "Reply with only the number." in (tmp_path / "config/best_skill.md").read_text()
    assert "validation score" in done.stdout
