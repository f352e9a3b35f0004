"""The viewers on real runs produced by ``run_training`` with the shipped-style fakes.

One run is interrupted (Ctrl-C raised from a callback after step 2) and resumed; the report,
diff, blame, dashboard and a tracker are checked on the partial and on the finished run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from fakes_e2e import BAD_RULE, GOOD_RULE, RULES_ONLY, make_optimizer, make_target
from skillgrad.callbacks import Control
from skillgrad.config import load_config
from skillgrad.dashboard import create_app
from skillgrad.report.compare import compare_runs
from skillgrad.report.html import write_html_report
from skillgrad.report.provenance import blame, skill_diff
from skillgrad.session import run_training
from skillgrad.trackers import TensorBoardCallback


def _cfg(root: Path, name: str, lr: float = 4) -> Any:
    return load_config(data={
        "env": {"task": "toy", "output_root": str(root), "run_name": name},
        "train": {"num_epochs": 2, "batch_size": 4, "patience": 5, "learning_rate": lr,
                  "min_learning_rate": 1, "stop_at_ceiling": False,
                  **RULES_ONLY},
    })  # fmt: skip


class InterruptAfter:
    """Simulates Ctrl-C after the n-th finished step."""

    def __init__(self, n: int) -> None:
        self.n, self.seen = n, 0

    def on_event(self, event: dict[str, Any], control: Control) -> None:
        if event.get("event") == "step_end":
            self.seen += 1
            if self.seen >= self.n:
                raise KeyboardInterrupt


def test_interrupted_then_resumed_run_is_reported(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        run_training(_cfg(tmp_path, "run"), optimizer=make_optimizer(), target=make_target(),
                     callbacks=[InterruptAfter(2)])  # fmt: skip
    run = tmp_path / "run"
    page = write_html_report(run).read_text()
    assert "<code>summary.json</code>" in page and "still in progress" in page
    assert page.split('id="steps"')[1].split("</table>")[0].count("<tr class=") == 2
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    assert client.get("/api/runs").json()[0]["status"] == "running"
    assert [p["step"] for p in client.get("/api/run/run").json()["points"]] == [1, 2]

    tb = TensorBoardCallback(tmp_path / "tb")
    result = run_training(_cfg(tmp_path, "run"), optimizer=make_optimizer(),
                          target=make_target(), callbacks=[tb])  # fmt: skip
    assert result.summary["status"] == "finished"
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert [e["resumed"] for e in events if e["event"] == "run_start"] == [False, True]

    page = write_html_report(run).read_text()
    assert "Missing files" not in page and 'id="test-scores">0 → 1<' in page
    # steps 3-4 proposed nothing new (the rule is learnt): nothing was gated
    assert '<td class="l">no edit applied</td>' in page
    assert "http://" not in page and "https://" not in page
    assert (run / "figures" / "scores.png").exists()
    diff = skill_diff(run)
    assert f"+- {GOOD_RULE}" in diff and BAD_RULE not in diff
    lines = {b.text: b for b in blame(run)}
    rule = lines[f"- {GOOD_RULE}"]
    assert (rule.source, rule.step, rule.epoch, rule.op) == ("reflect", 2, 1, "add")
    assert rule.trajectory_ids and all(t.startswith("step_0002/") for t in rule.trajectory_ids)
    assert not [b for b in lines.values() if b.source == "unattributed"]
    api = client.get("/api/run/run").json()
    assert api["status"] == "finished" and api["best_score"] == 1.0
    assert [p["step"] for p in api["points"]][:2] == [1, 2] and len(api["points"]) >= 4
    assert "Always answer with the word in UPPERCASE." in client.get("/run/run").text

    # the tracker saw the resumed steps only (steps 1-2 happened before it was attached)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    steps = [e.step for e in acc.Scalars("val_score")]
    assert steps and min(steps) > 2 and max(steps) == max(p["step"] for p in api["points"])


def test_compare_two_real_runs(tmp_path: Path) -> None:
    a = run_training(_cfg(tmp_path, "lr4"), optimizer=make_optimizer(), target=make_target())
    b = run_training(_cfg(tmp_path, "lr2", lr=2), optimizer=make_optimizer(), target=make_target())
    result = compare_runs([a.run_dir, b.run_dir])
    assert result.names == ("lr4", "lr2")
    assert result.config_diff["train.learning_rate"] == (4, 2)
    assert [r["val_best"] for r in result.rows] == [1.0, 1.0]
    assert all(r["status"] == "finished" for r in result.rows)
