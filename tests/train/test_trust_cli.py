"""Gains you can trust, through the real CLI with the shipped fakes: a run that cannot learn says
why, the noise floor (A/A) of a nondeterministic target and the gate refusing a noise-sized
gain, and the headroom check refusing a saturated split."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from skillgrad.cli import app
from skillgrad.runs.io import read_json, read_jsonl

FAKES = Path(__file__).parent / "fakes_trust.py"
TOY = Path(__file__).parents[1] / "fakes_e2e.py"
runner = CliRunner()


def _config(
    tmp_path: Path, optimizer: str, target: str, train: str = "", options: str = ""
) -> Path:
    path = tmp_path / "trust.yaml"
    path.write_text(
        f"""
train: {{batch_size: 4, examples: off, explore: off, {train or "num_epochs: 1, patience: 2"}}}
models:
  optimizer: {{provider: function, model: "{optimizer}"}}
  target: {{provider: function, model: "{target}"}}
env: {{task: toy, output_root: "{tmp_path / "runs"}", options: {{{options}}}}}
"""
    )
    return path


def _train(cfg: Path, *extra: str) -> Any:
    return runner.invoke(app, ["train", str(cfg), "--quiet", *extra])


def test_an_optimizer_answering_an_older_format_says_why_nothing_was_learned(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path, f"{FAKES}:OldFormatOptimizer", f"{TOY}:FakeTarget")
    result = _train(cfg)
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs/trust"
    history = read_json(run / "history.json")
    assert history and all(r["stall_reason"] for r in history)
    reason = history[0]["stall_reason"]
    assert reason.startswith("every reflection failed validation")
    assert "rules" in reason and "Field required" in reason  # the first validation error
    assert history[0]["gate_reason"] == f"no edit applied: {reason}"
    assert all(r["gate_rule"] is None for r in history)  # no gate decided these steps
    gate = read_json(run / "steps/step_0001/gate.json")
    assert gate["reason"] == f"no edit applied: {reason}"
    # the step line (the console's text of each step_end event)
    from skillgrad.callbacks import describe_event

    steps = [e for e in read_jsonl(run / "events.jsonl") if e["event"] == "step_end"]
    line = describe_event(steps[0])
    assert line is not None and "could not learn: every reflection failed validation" in line[1]
    # two in a row: the console warns (a warning event, shown even with --quiet)
    warnings = [e["message"] for e in read_jsonl(run / "events.jsonl") if e["event"] == "warning"]
    assert any("2 steps in a row could not learn" in w for w in warnings)
    assert "2 steps in a row could not learn" in result.output
    report = (run / "report.md").read_text()
    assert "## Steps that could not learn" in report and "Field required" in report
    assert read_json(run / "summary.json")["stalled_steps"][0]["reason"] == reason
    from starlette.testclient import TestClient

    from skillgrad.dashboard import create_app

    page = TestClient(create_app(run.parent), base_url="http://127.0.0.1").get("/run/trust")
    assert page.status_code == 200 and "every reflection failed validation" in page.text


def test_a_noisy_target_has_its_flips_measured_and_its_noise_sized_gain_refused(
    tmp_path: Path,
) -> None:
    options = "n_train: 8, n_val: 16, n_test: 4"
    noisy = f"{FAKES}:NoisyTarget"
    # the noise floor guarding the strict gate (docs/gate.md's worked example)
    train = "num_epochs: 4, patience: 8, use_slow_update: false, gate_rule: strict"
    free = _config(
        tmp_path, f"{FAKES}:NeutralOptimizer", noisy, f"{train}, noise_gate: false", options
    )
    loose = _train(free, "--no-headroom-check")
    assert loose.exit_code == 0, loose.output
    loose_summary = read_json(tmp_path / "runs/trust/summary.json")
    # without the noise floor the strict gate takes a neutral rule's coin flips as a gain
    noise_gains = [a for a in loose_summary["accepted_steps"] if a["mean_diff"] > 0]
    assert noise_gains, "the fake's coin flips should give the neutral rule a 'gain'"
    biggest = max(a["mean_diff"] for a in noise_gains)

    guarded = _config(
        tmp_path,
        f"{FAKES}:NeutralOptimizer",
        noisy,
        f"{train}, noise_repeats: 3, noise_calls: fresh",
        options,
    )
    result = _train(guarded, "--fresh", "--no-headroom-check")
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs/trust-2"
    summary = read_json(run / "summary.json")
    noise = summary["noise_floor"]
    assert noise["repeats"] == 3 and noise["items"] == 16 and noise["calls"] == "fresh"
    assert noise["calls_paid"] == 2 * 16  # two fresh repeats of every val item
    assert 0.2 < noise["flip_rate"] <= 1.0 and noise["flipped"]
    assert noise["noise_threshold"] >= biggest  # what the loose run accepted is noise-sized
    assert summary["accepted_steps"] == []
    refused = [r for r in read_json(run / "history.json") if r["gate_evaluated"]]
    assert refused and all(not r["accepted"] for r in refused)
    assert any(0 < (r["mean_diff"] or 0) <= noise["noise_threshold"] for r in refused)
    report = (run / "report.md").read_text()
    assert "noise floor (A/A, 3 passes" in report and "32 target calls paid" in report


def test_a_deterministic_target_measures_its_noise_floor_for_free(tmp_path: Path) -> None:
    train = "num_epochs: 1, patience: 2, noise_repeats: 4"
    cfg = _config(tmp_path, f"{TOY}:FakeOptimizer", f"{TOY}:FakeTarget", train)
    result = _train(cfg)
    assert result.exit_code == 0, result.output
    summary = read_json(tmp_path / "runs/trust/summary.json")
    noise = summary["noise_floor"]
    assert noise["calls"] == "cached" and noise["calls_paid"] == 0
    assert noise["flip_rate"] == 0.0 and noise["noise_threshold"] == 0.0
    assert summary["usage_by_stage"].get("target/noise_floor") is None  # nothing paid
    report = (tmp_path / "runs/trust/report.md").read_text()
    assert "answered by the call cache (deterministic target: 0 calls paid)" in report
    assert summary["accepted_steps"] and summary["val_best"] == 1.0


def test_headroom_refuses_a_saturated_split_before_any_optimizer_call(tmp_path: Path) -> None:
    cfg = _config(tmp_path, f"{TOY}:FakeOptimizer", f"{FAKES}:PerfectTarget")
    result = _train(cfg)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "saturated" in text and "--no-headroom-check" in text
    run = tmp_path / "runs/trust"
    summary = read_json(run / "summary.json")
    assert summary["status"] == "no_headroom"
    assert summary["usage"].get("optimizer", {}).get("calls", 0) == 0
    events = [e for e in read_jsonl(run / "events.jsonl") if e["event"] == "headroom"]
    assert events[0]["at_ceiling"] == events[0]["items"] and events[0]["saturated"]
    # overridden: the run resumes from its baseline and stops at the reward ceiling at once
    again = _train(cfg, "--no-headroom-check")
    assert again.exit_code == 0, again.output
    summary = read_json(run / "summary.json")
    assert summary["status"] == "finished" and "reward ceiling" in summary["stop_reason"]
    assert summary["steps"] == 0
    assert summary["usage"].get("optimizer", {}).get("calls", 0) == 0


def test_eval_repeat_measures_flips_and_eval_headroom_refuses_a_saturated_split(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("")
    noisy = _config(tmp_path, f"{TOY}:FakeOptimizer", f"{FAKES}:NoisyTarget", "", "n_val: 10")
    out = tmp_path / "noise.json"
    args = ["eval", str(noisy), "--skill", str(empty), "--split", "val", "--repeat", "3"]
    fresh = runner.invoke(app, [*args, "--set", "train.noise_calls=fresh", "--out", str(out)])
    assert fresh.exit_code == 0, fresh.output
    noise = json.loads(out.read_text())["noise_floor"]
    assert noise["repeats"] == 3 and noise["items"] == 10 and noise["calls_paid"] == 20
    assert noise["flip_rate"] > 0 and noise["minimum_detectable_effect"] > 0
    assert "flip rate" in fresh.output and "20 fresh target calls paid" in fresh.output
    cached = runner.invoke(app, args)  # in process: the call cache answers, nothing is paid
    assert cached.exit_code == 0, cached.output
    assert "answered by the call cache (0 calls paid)" in " ".join(cached.output.split())

    perfect = _config(tmp_path, f"{TOY}:FakeOptimizer", f"{FAKES}:PerfectTarget")
    room = runner.invoke(
        app, ["eval", str(perfect), "--skill", str(empty), "--split", "val", "--headroom"]
    )
    assert room.exit_code == 2, room.output
    assert "saturated" in room.output and "6 at the ceiling" in room.output


def test_noise_remeasure_scores_the_incumbent_afresh_at_every_gate(tmp_path: Path) -> None:
    train = "num_epochs: 1, patience: 8, noise_calls: fresh, noise_remeasure: true"
    cfg = _config(tmp_path, f"{FAKES}:NeutralOptimizer", f"{FAKES}:NoisyTarget", train)
    result = _train(cfg, "--no-headroom-check")
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs/trust"
    gated = [r for r in read_json(run / "history.json") if r["gate_total"]]
    assert gated
    db = sqlite3.connect(run / "calls.sqlite")
    try:
        ids = [r[0] for r in db.execute("SELECT item_id FROM results")]
    finally:
        db.close()
    for record in gated:  # the incumbent's val items drawn again, kept per step
        again = [i for i in ids if i.endswith(f"#s{100_000 + record['step']}")]
        assert len(again) == 6, record["step"]
        gate = read_json(run / f"steps/step_{record['step']:04d}/gate.json")
        assert set(gate["incumbent_items"]) == {i.split("#")[0] for i in again}


def test_a_coarse_gate_is_a_warning_before_the_first_step(tmp_path: Path) -> None:
    """Six val items under the paired gate: only 4 of 6 fixed can pass. The run goes on, and
    says so once, before its first step (a resume does not repeat it)."""
    train = "num_epochs: 1, patience: 2, gate_rule: paired"
    cfg = _config(tmp_path, f"{TOY}:FakeOptimizer", f"{TOY}:FakeTarget", train, "n_val: 6")
    result = _train(cfg)
    assert result.exit_code == 0, result.output
    assert "and nothing smaller" in " ".join(result.output.split())
    events = read_jsonl(tmp_path / "runs/trust/events.jsonl")
    warned = [e for e in events if e["event"] == "warning" and "nothing smaller" in e["message"]]
    assert len(warned) == 1 and "needs 20 val items" in warned[0]["message"]
    (room,) = [e for e in events if e["event"] == "headroom"]
    assert room["coarse"] and room["items_for_effect"] == 20
    many = _config(tmp_path, f"{TOY}:FakeOptimizer", f"{TOY}:FakeTarget", train, "n_val: 16")
    quiet = _train(many, "--fresh")
    assert quiet.exit_code == 0 and "nothing smaller" not in " ".join(quiet.output.split())
