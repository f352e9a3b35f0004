"""Lone surrogates from a real OpenAI-compatible server on 127.0.0.1 (the JSON escape
``"Caf\\udce9"``, valid JSON that decodes to a code point UTF-8 cannot encode): as the target's
reply, and inside a reflection's rule (on the wire, and escaped inside the reply's own JSON).
``skillgrad train`` and ``skillgrad eval`` complete with exit 0, the text kept as U+FFFD, and a
run stopped by its budget resumes without paying any call twice."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for `fakes_e2e`
from tests.servers import FakeLLMServer, serve

from fakes_e2e import GOOD_RULE, optimizer_reply, target_reply
from skillgrad.cli.main import app
from skillgrad.runs.cache import CallCache
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.testing import ToyTask, user_text
from skillgrad.types import ChatRequest, Message

runner = CliRunner()
LONE = "Caf\udce9"
SAFE = "Caf\ufffd"
RULE = f"{GOOD_RULE} Not {LONE}."
# the target's reply to one word of each split is the lone surrogate
BROKEN_WORDS = {ToyTask().load_split(s)[0].input for s in ("train", "val", "test")}  # type: ignore[arg-type]


def _swap(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(GOOD_RULE, RULE)
    if isinstance(value, dict):
        return {k: _swap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v) for v in value]
    return value


def router(nested: bool) -> Any:
    """The server plays both models. The optimizer's good rule holds the lone surrogate: as a
    JSON escape of the HTTP body (``nested=False``: the reply text holds the code point) or
    escaped inside the reply's own JSON text (``nested=True``: the parsed rule holds it)."""

    def route(body: dict[str, Any]) -> Any:
        request = ChatRequest(messages=tuple(Message.from_json(m) for m in body["messages"]))
        if body["model"] == "fake-optimizer":
            reply = _swap(optimizer_reply(request))
            return reply if nested else json.dumps(reply, ensure_ascii=False)
        if user_text(request).removeprefix("Word: ").strip() in BROKEN_WORDS:
            return LONE
        return target_reply(request)

    return route


def write_config(server: FakeLLMServer, tmp: Path, name: str) -> Path:
    model = {"provider": "openai_compatible", "base_url": server.base_url, "max_retries": 1}
    data = {
        "env": {"task": "toy", "output_root": str(tmp / "runs"), "run_name": name},
        "train": {"num_epochs": 2, "batch_size": 4, "stop_at_ceiling": False},
        "models": {
            "optimizer": {**model, "model": "fake-optimizer"},
            "target": {**model, "model": "fake-target"},
        },
        # one call at a time: with calls in flight, which ones an early-rejected gate evaluation
        # cancels after the server answered depends on timing, and the count below is exact
        "hardware": {"rollout_workers": 1, "analyst_workers": 1},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(data))
    return path


def train(config: Path, *extra: str) -> Any:
    return runner.invoke(app, ["train", str(config), "--quiet", *extra])


@pytest.mark.parametrize("nested", [False, True], ids=["on-the-wire", "inside-the-json"])
def test_lone_surrogates_in_replies_train_resume_and_evaluate(tmp_path: Path, nested: bool) -> None:
    with serve(reply=router(nested)) as server:
        full = train(write_config(server, tmp_path, "full"))
        assert full.exit_code == 0, full.output
        uninterrupted = server.count()
    run = tmp_path / "runs" / "full"
    best = (run / "best_skill.md").read_text(encoding="utf-8")
    assert f"Not {SAFE}." in best  # the rule learned, its surrogate kept as U+FFFD
    summary = read_json(run / "summary.json")
    assert summary["status"] == "finished" and summary["val_best"] < 1.0  # one val word broken

    with serve(reply=router(nested)) as server:
        config = write_config(server, tmp_path, "resumed")
        stopped = train(config, "--set", "budget.max_calls=20")
        assert stopped.exit_code == 3, stopped.output  # the budget, not a traceback
        resumed = train(config, "--set", "budget.max_calls=10000")
        assert resumed.exit_code == 0, resumed.output
        assert server.count() == uninterrupted  # every call paid once across stop + resume
    again = tmp_path / "runs" / "resumed"
    assert (again / "best_skill.md").read_text(encoding="utf-8") == best
    scores = [{k: r[k] for k in ("step", "val_score")} for r in read_json(again / "history.json")]
    assert scores == [
        {k: r[k] for k in ("step", "val_score")} for r in read_json(run / "history.json")
    ]

    ledger = CallCache(run / "calls.sqlite")
    try:
        keys = ledger.keys()
        replies = [c.text for key in keys if (c := ledger.get(key)) is not None]
    finally:
        ledger.close()
    assert SAFE in replies and not any("\udce9" in r for r in replies)

    with serve(reply=router(nested)) as server:
        config = write_config(server, tmp_path, "full")
        args = ["eval", str(config), "--skill", str(run / "best_skill.md"), "--split", "val"]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        assert "over 6 items" in first.output and "mean score 0.8333" in first.output
        paid = server.count()
        second = runner.invoke(app, args)  # answered from the evaluation cache
        assert second.exit_code == 0 and server.count() == paid
    rows = read_jsonl(run / "transfer.jsonl")
    assert [(r["n"], r["missing"], r["mean_score"]) for r in rows] == [(6, 0, 5 / 6)]
