"""The whole loop on the toy task with the shipped fakes: it learns, gates, decays, stops."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.config import load_config
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.testing import FunctionBackend, optimizer_call_kind, user_text
from skillgrad.train.select import Schedule, effective_lr

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_e2e import BAD_RULE, GOOD_RULE, RULES_ONLY, make_optimizer, make_target


def _cfg(tmp_path: Path, **train: Any) -> Any:
    base = {
        "num_epochs": 2,
        "batch_size": 4,
        "patience": 5,
        "learning_rate": 4,
        "min_learning_rate": 1,
        "lr_scheduler": "cosine",
        "lr_decay_on_reject": 0.5,
        "stop_at_ceiling": False,  # these runs exercise epoch 2 after val reaches 1.0
        **RULES_ONLY,
    }
    return load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {**base, **train},
        }
    )


def test_loop_learns_the_rule_and_rejects_the_harmful_edit(tmp_path: Path) -> None:
    optimizer = make_optimizer()
    result = run_training(_cfg(tmp_path), optimizer=optimizer, target=make_target())
    run = result.run_dir
    best = (run / "best_skill.md").read_text()
    assert GOOD_RULE in best and BAD_RULE not in best
    s = result.summary
    assert s["val_initial"] == 0.0 and s["val_best"] == 1.0
    assert s["test_initial"] == 0.0 and s["test_best"] == 1.0
    history = read_json(run / "history.json")
    first, second = history[0], history[1]
    # step 1: the harmful rule was applied to the candidate and rejected by the gate
    assert first["n_applied"] == 1 and not first["accepted"]
    assert BAD_RULE in (run / "steps/step_0001/candidate.md").read_text()
    # ... and it appears in the rejected-edit buffer of the next reflection call
    reflect_prompts = [user_text(r) for r in optimizer.calls if optimizer_call_kind(r) == "reflect"]
    buffer_part = reflect_prompts[1].split("## Rules rejected before")[1].split("## ")[0]
    assert BAD_RULE in buffer_part and "validation score 0.000 against" in buffer_part
    assert second["accepted"] and second["val_score"] == 1.0
    # provenance of the accepted line
    log = read_jsonl(run / "patch_log.jsonl")
    assert [r["edit"]["content"] for r in log] == [f"- {GOOD_RULE}"]
    assert log[0]["step"] == 2 and log[0]["edit"]["trajectory_ids"]
    assert all(t.startswith("step_0002/") for t in log[0]["edit"]["trajectory_ids"])


def test_every_run_directory_artifact_is_written(tmp_path: Path) -> None:
    run = run_training(_cfg(tmp_path), optimizer=make_optimizer(), target=make_target()).run_dir
    for name in [
        "config.json",
        "history.json",
        "runtime_state.json",
        "best_skill.md",
        "skills/skill_v0000.md",
        "patch_log.jsonl",
        "conflicts.json",
        "events.jsonl",
        "summary.json",
        "report.md",
        "splits.json",
        "calls.sqlite",
        "slow_update/epoch_02/categories.json",
        "slow_update/epoch_02/guidance.json",
        "meta_skill/epoch_01/memo.md",
        "meta_skill/epoch_02/memo.md",
    ]:
        assert (run / name).exists(), name
    for name in [
        "trajectories.jsonl",
        "reflections.json",
        "aggregate.json",
        "selection.json",
        "candidate.md",
        "apply_report.json",
        "gate.json",
    ]:
        assert (run / "steps/step_0001" / name).exists(), name
    events = {e["event"] for e in read_jsonl(run / "events.jsonl")}
    assert {
        "run_start",
        "baseline",
        "step_start",
        "step_end",
        "slow_update",
        "meta_skill",
        "epoch_end",
        "run_end",
    } <= events


def test_learning_rate_follows_schedule_and_decays_on_rejection(tmp_path: Path) -> None:
    run = run_training(_cfg(tmp_path), optimizer=make_optimizer(), target=make_target()).run_dir
    history = [r for r in read_json(run / "history.json") if r["kind"] == "step"]
    schedule = Schedule("cosine", 4, 1, total_steps=2 * 2)
    rejections = 0
    for i, rec in enumerate(history, start=1):
        assert rec["lr"] == pytest.approx(effective_lr(schedule, i, 0.5, rejections), abs=1e-6)
        rejections += rec["gate_evaluated"] > 0 and not rec["accepted"]
    assert history[1]["lr"] == pytest.approx(schedule.at(2) * 0.5)  # decayed by step 1's reject


def test_patience_stops_the_run(tmp_path: Path) -> None:
    never = FunctionBackend(lambda r: "nope", name="function:never")
    cfg = _cfg(tmp_path, patience=2, num_epochs=3)
    result = run_training(cfg, optimizer=make_optimizer(), target=never)
    assert result.summary["status"] == "early_stopped"
    assert "patience 2" in result.summary["stop_reason"]
    assert result.summary["steps"] == 2


def test_finished_run_replays_with_zero_model_calls(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    first = run_training(cfg, optimizer=make_optimizer(), target=make_target())
    opt, tgt = make_optimizer(), make_target()
    again = run_training(cfg, optimizer=opt, target=tgt)
    assert opt.calls == [] and tgt.calls == []
    assert again.summary == first.summary


def test_no_gate_is_explicit_and_recorded(tmp_path: Path) -> None:
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path)},
            "train": {"num_epochs": 1, "batch_size": 4, "gate": False},
        }
    )
    result = run_training(cfg, optimizer=make_optimizer(), target=make_target())
    assert result.summary["no_gate"] is True
    assert any("--no-gate" in w for w in result.summary["warnings"])
    assert json.loads((result.run_dir / "config.json").read_text())["train"]["gate"] is False
    assert read_json(result.run_dir / "history.json")[0]["accepted"]  # harmful edit went in


def test_preflight_estimate_bounds_the_real_usage(tmp_path: Path) -> None:
    result = run_training(_cfg(tmp_path), optimizer=make_optimizer(), target=make_target())
    events = read_jsonl(result.run_dir / "events.jsonl")
    pre = next(e for e in events if e["event"] == "preflight")
    assert list(e["event"] for e in events).index("preflight") < [e["event"] for e in events].index(
        "baseline"
    )  # printed before any model call
    usage = result.summary["usage"]
    for role in ("optimizer", "target"):
        assert pre["calls"][role] >= usage[role]["calls"] > 0
        assert pre["tokens"][role] > 0


def test_resume_adds_nothing_to_the_preflight_bound_of_a_one_call_task(tmp_path: Path) -> None:
    """``train.explore_resume`` (on by default) acts on episodes only: for a task whose rollout
    is one call, the bound and the calls made are the same with it on and off (the environment
    case, where it raises the bound: ``test_explore.py``'s fork runs)."""
    pre, used = {}, {}
    for resume in ("on", "off"):
        cfg = _cfg(tmp_path / resume, explore="on", explore_resume=resume, num_epochs=1)
        result = run_training(cfg, optimizer=make_optimizer(), target=make_target())
        events = read_jsonl(result.run_dir / "events.jsonl")
        pre[resume] = next(e for e in events if e["event"] == "preflight")["calls"]["target"]
        used[resume] = result.summary["usage"]["target"]["calls"]
    assert pre["on"] == pre["off"] >= used["on"] == used["off"] > 0


MARKERS = {  # a phrase of each call kind's user template -> the kind
    "## Failed tasks": "reflect",
    "with the same feedback": "deep_reflect",
    "Group the indices": "merge",
    "Order the proposed changes": "rank",
    "The same ": "slow_update",
    "Revise the memo": "meta_skill",
}


def test_every_optimizer_call_kind_sends_its_own_system_prompt(tmp_path: Path) -> None:
    from skillgrad.prompts import render_prompt

    optimizer = make_optimizer()
    cfg = _cfg(tmp_path, semantic_merge=True, rank_with_optimizer=True)
    run_training(cfg, optimizer=optimizer, target=make_target())
    seen = set()
    for request in optimizer.calls:
        kind = next(k for marker, k in MARKERS.items() if marker in user_text(request))
        assert request.messages[0].role == "system"
        assert request.messages[0].content == render_prompt(f"{kind}_system"), kind
        seen.add(kind)
    assert {"reflect", "slow_update", "meta_skill"} <= seen


def test_the_report_shows_the_learned_skill(tmp_path: Path) -> None:
    result = run_training(_cfg(tmp_path), optimizer=make_optimizer(), target=make_target())
    report = (result.run_dir / "report.md").read_text()
    section = report.split("## Learned skill")[1].split("## ")[0]
    assert f"- {GOOD_RULE}" in section and BAD_RULE not in section
    excerpt = result.summary["best_skill_excerpt"]
    assert excerpt["text"] == f"- {GOOD_RULE}" and not excerpt["cut"]
