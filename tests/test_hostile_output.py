"""Hostile model output and odd task options through the installed CLI (issue 24, items 1-3, 11
and the rollout rule): a deeply nested optimizer reply, nested tool-call arguments (text and
native), BFCL replies that parse but break a naive reader, a scorer that raises, a target that
is down for some items, and a typo'd split size. Each is one item's data or a clear error with
exit code 2; never a traceback, never a dead or wedged run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skillgrad.runs.io import read_json, read_jsonl

FAKES = Path(__file__).parent / "fakes_hostile.py"
E2E = Path(__file__).parent / "fakes_e2e.py"


def _cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", *args], capture_output=True, text=True, timeout=timeout
    )


def _config(tmp_path: Path, env: str, target: str, optimizer: str = f"{E2E}:FakeOptimizer") -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"""env: {env}
train: {{num_epochs: 1, batch_size: 4, steps_per_epoch: 1}}
models:
  optimizer: {{provider: function, model: "{optimizer}"}}
  target: {{provider: function, model: "{target}", max_retries: 0}}
""",
        encoding="utf-8",
    )
    return path


def _eval(tmp_path: Path, cfg: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    skill = tmp_path / "skill.md"
    skill.write_text("# Rules\n- Answer briefly.\n", encoding="utf-8")
    out = tmp_path / "result.json"
    proc = _cli("eval", str(cfg), "--skill", str(skill), "--split", "test", "--out", str(out))
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc, (json.loads(out.read_text()) if out.exists() else {})


def test_a_deeply_nested_optimizer_reply_is_one_failed_reflection_and_resume_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "runs"
    env = f'{{task: toy, output_root: "{root}", run_name: deep}}'
    cfg = _config(tmp_path, env, f"{E2E}:FakeTarget", optimizer=f"{FAKES}:DeepOptimizer")
    # the process dies once, mid-reflection, with the deep reply already in the call cache ...
    monkeypatch.setenv("FAKE_DIE_ON_REASK", str(tmp_path / "died"))
    crashed = _cli("train", str(cfg), "--quiet")
    assert crashed.returncode == 9 and (tmp_path / "died").exists(), crashed.stderr[-3000:]
    # ... and the resume replays it from the cache: one failed reflection, not a wedged run
    first = _cli("train", str(cfg), "--quiet")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Traceback" not in first.stderr
    run = root / "deep"
    record = read_json(run / "history.json")[0]
    assert record["n_reflections"] >= 1
    assert record["n_failed_reflections"] == record["n_reflections"]  # counted, then dropped
    reflections = read_json(run / "steps/step_0001/reflections.json")
    assert all(not r["ok"] and r["reasked"] and len(r["raw"]) == 2 for r in reflections)
    assert "nested more than 100 levels deep" in reflections[0]["error"]
    # resume: every optimizer reply now comes from the call cache and is refused again, the
    # same way; the run goes on to its next epoch
    again = _cli("train", str(cfg), "--quiet", "--set", "train.num_epochs=2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Traceback" not in again.stderr
    assert read_json(run / "summary.json")["status"] == "finished"


@pytest.mark.parametrize(
    ("target", "protocol"), [("NestedTextTarget", "text"), ("NestedNativeTarget", "native")]
)
def test_a_nested_tool_call_fails_its_item_with_the_reason_and_eval_goes_on(
    tmp_path: Path, target: str, protocol: str
) -> None:
    options = f"{{n_train: 1, n_val: 1, n_test: 3, tool_protocol: {protocol}, max_steps: 2}}"
    env = f'{{task: tool_use, options: {options}, output_root: "{tmp_path / "runs"}"}}'
    proc, result = _eval(tmp_path, _config(tmp_path, env, f"{FAKES}:{target}"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert result["n"] == 3
    for item in result["items"].values():
        assert item["score"] == 0.0 and "infra_error" not in item
        assert "step limit reached" in item["feedback"]
        assert "not valid JSON (nested more than 100 levels deep)" in item["feedback"]


def test_a_target_down_for_some_tool_items_leaves_them_missing_not_zero(tmp_path: Path) -> None:
    options = "{n_train: 1, n_val: 1, n_test: 8, tool_protocol: text}"
    env = f'{{task: tool_use, options: {options}, output_root: "{tmp_path / "runs"}"}}'
    proc, result = _eval(tmp_path, _config(tmp_path, env, f"{FAKES}:HalfDownTarget"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    items = result["items"].values()
    down = [i for i in items if "infra_error" in i]
    scored = [i for i in items if "infra_error" not in i]
    assert down and scored  # the fixture has both kinds of question
    assert all("fake endpoint down" in i["infra_error"] for i in down)
    assert all("expected" in i["feedback"] for i in scored)


def test_bfcl_replies_that_parse_but_nest_deep_each_get_a_verdict(tmp_path: Path) -> None:
    from skillgrad.benchmarks.bfcl.data import BUNDLE

    BUNDLE.pull()  # the shared data cache (a registry fetch only when it is missing)
    options = "{category: simple, n_train: 2, n_val: 2, n_test: 12}"
    env = f'{{task: bfcl, options: {options}, output_root: "{tmp_path / "runs"}"}}'
    proc, result = _eval(tmp_path, _config(tmp_path, env, f"{FAKES}:HostileBfclTarget"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert result["n"] == 12
    for item in result["items"].values():
        assert item["score"] == 0.0
        assert item["feedback"].startswith("the reply is not a list of function calls")
        assert "scorer raised" not in item["feedback"]


def test_a_scorer_that_raises_scores_its_items_zero_with_the_error(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    env = f'{{task: "{FAKES}:RaisingToyTask", output_root: "{root}", run_name: raising}}'
    cfg = _config(tmp_path, env, f"{E2E}:FakeTarget")
    proc, result = _eval(tmp_path, cfg)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for item in result["items"].values():
        assert item["score"] == 0.0 and "infra_error" not in item
        assert item["feedback"].startswith("error: scorer raised TypeError: unhashable type")
    trained = _cli("train", str(cfg), "--quiet")  # a stage of nothing but scorer errors goes on
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert "Traceback" not in trained.stderr
    first = read_jsonl(root / "raising/steps/step_0001/trajectories.jsonl")[0]
    assert first["error"].startswith("scorer raised TypeError")


def test_a_typo_in_a_split_size_is_a_clear_error_before_any_item_is_built(tmp_path: Path) -> None:
    env = f'{{task: toy, options: {{n_test: 1000000000}}, output_root: "{tmp_path / "runs"}"}}'
    cfg = _config(tmp_path, env, f"{E2E}:FakeTarget")
    start = time.monotonic()
    proc = _cli("train", str(cfg), "--quiet", timeout=60)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    message = " ".join(proc.stderr.split())
    assert "env.options.n_test is 1,000,000,000; at most 100,000 items are allowed" in message
    assert time.monotonic() - start < 30  # refused up front, not after building items
