"""Whole training runs whose two models are HTTP endpoints (a local OpenAI-compatible server):
the loop learns through the real wire, structured output falls back once, and a run stopped by
its budget resumes without paying for any call twice."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for `fakes_e2e`
from tests.servers import FakeLLMServer, Recorded, serve

from fakes_e2e import BAD_RULE, GOOD_RULE, optimizer_reply, target_reply
from skillgrad.config import load_config
from skillgrad.errors import BudgetExceeded
from skillgrad.runs.cache import CallCache
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.types import ChatRequest, Message


def route(body: dict[str, Any]) -> Any:
    """The server plays both models, by model name, with the shipped e2e fakes."""
    request = ChatRequest(messages=tuple(Message.from_json(m) for m in body["messages"]))
    if body["model"] == "fake-optimizer":
        return optimizer_reply(request)
    return target_reply(request)


def config(
    server: FakeLLMServer, tmp: Path, run_name: str, hardware: Any = None, **budget: Any
) -> Any:
    model = {"provider": "openai_compatible", "base_url": server.base_url, "max_retries": 1}
    return load_config(data={
        "env": {"task": "toy", "output_root": str(tmp), "run_name": run_name},
        "train": {"num_epochs": 2, "batch_size": 4, "patience": 5, "learning_rate": 4,
                  "min_learning_rate": 1, "lr_decay_on_reject": 0.5,
                  "stop_at_ceiling": False},  # both epochs run: the calls counted below
        "models": {"optimizer": {**model, "model": "fake-optimizer"},
                   "target": {**model, "model": "fake-target"}},
        "budget": budget,
        "hardware": hardware or {},
    })  # fmt: skip


def response_format_type(rec: Recorded) -> str | None:
    return (rec.body.get("response_format") or {}).get("type")


def test_training_over_http_learns_and_probes_structured_output_once(tmp_path: Path) -> None:
    with serve(reply=route, reject_modes=("json_schema",)) as server:
        result = run_training(config(server, tmp_path, "http"))
        best = (result.run_dir / "best_skill.md").read_text()
        assert GOOD_RULE in best and BAD_RULE not in best
        assert result.summary["val_best"] == 1.0 and result.summary["test_best"] == 1.0
        models = {r.body["model"] for r in server.requests}
        assert models == {"fake-optimizer", "fake-target"}
        # the optimizer's first structured call learned that json_schema is refused;
        # every later structured call went straight to json_object
        assert server.count(lambda r: response_format_type(r) == "json_schema") == 1
        assert server.count(lambda r: response_format_type(r) == "json_object") >= 3
        # one ledger line per answered call: all requests but the refused probe
        ledger = CallCache(result.run_dir / "calls.sqlite")
        totals = ledger.totals()
        ledger.close()
        assert totals["optimizer"]["calls"] > 0 and totals["target"]["calls"] > 0
        assert totals["all"]["calls"] == server.count() - 1


def test_budget_stop_then_resume_pays_each_call_once(tmp_path: Path) -> None:
    # one call at a time: with calls in flight, which ones an early-rejected gate evaluation
    # cancels after the server answered depends on timing, and the counts below are exact
    one = {"rollout_workers": 1, "analyst_workers": 1}
    with serve(reply=route) as server:
        full = run_training(config(server, tmp_path, "full", hardware=one))
        uninterrupted = server.count()
    with serve(reply=route) as server:
        with pytest.raises(BudgetExceeded, match="max_calls=20"):
            run_training(config(server, tmp_path, "resumed", hardware=one, max_calls=20))
        assert server.count() == 20
        stopped = read_json(tmp_path / "resumed" / "summary.json")
        assert stopped["status"] == "budget_exhausted"
        resumed = run_training(config(server, tmp_path, "resumed", hardware=one, max_calls=10_000))
        assert server.count() == uninterrupted  # nothing paid twice across stop + resume
    assert resumed.summary["val_best"] == full.summary["val_best"] == 1.0
    assert (resumed.run_dir / "best_skill.md").read_text() == (
        full.run_dir / "best_skill.md"
    ).read_text()

    def history(run_dir: Path) -> list[dict[str, Any]]:
        # per-step scores, decisions, calls, tokens and cost; wall-clock timings differ
        return [
            {k: v for k, v in r.items() if k != "timings"}
            for r in read_json(run_dir / "history.json")
        ]

    assert history(resumed.run_dir) == history(full.run_dir)
