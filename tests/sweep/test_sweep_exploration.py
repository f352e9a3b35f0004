"""A sweep says, per configuration, what exploration found (``sweep/exploration.py``): two real
TinyEnv runs with the shipped fakes, one whose exploration solves both failed train episodes and
one whose target never solves anything, read back through the sweep summary and its report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgrad.config import load_config
from skillgrad.errors import RunDirError
from skillgrad.report.sweep import exploration_text, render_sweep_text, run_lines
from skillgrad.report.sweep_html import render_sweep_html
from skillgrad.runs.view import run_minutes
from skillgrad.session import run_training
from skillgrad.sweep.run_rows import run_row
from skillgrad.sweep.summary import build_sweep_summary
from skillgrad.testing import (
    FunctionBackend,
    optimizer_call_kind,
    rules_reply,
)
from skillgrad.types import ChatRequest

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_env import explorer as finder


def optimizer(request: ChatRequest) -> Any:
    assert optimizer_call_kind(request) in ("reflect", "deep_reflect", "contrast", "revise")
    return rules_reply("Look around before you act.")


def _run(sweep: Path, name: str, seed: int, player: Any) -> None:
    options = {"env": "skillgrad.testing:TinyEnv", "n_train": 2, "n_val": 2, "n_test": 1,
               "max_steps": 4, "use_gold": False, "seed": seed}  # fmt: skip
    train = {"num_epochs": 1, "steps_per_epoch": 1, "batch_size": 2, "explore": "on",
             "semantic_merge": False, "rank_with_optimizer": False, "use_slow_update": False,
             "use_meta_skill": False, "gate_rule": "strict", "seed": seed}  # fmt: skip
    env = {"task": "environment", "output_root": str(sweep), "run_name": name, "options": options}
    cfg = load_config(data={"env": env, "train": train})
    run_training(cfg, optimizer=FunctionBackend(optimizer), target=FunctionBackend(player))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sweep")
    _run(folder, "seed0", 0, finder)
    _run(folder, "seed1", 1, lambda r: "look")
    jobs = [{"name": f"seed{i}", "params": {}, "seed": i, "overrides": []} for i in (0, 1)]
    plan = {"sweep_id": "x", "seeds": [0, 1], "grid": [], "vary_split": True, "jobs": jobs}
    (folder / "sweep.json").write_text(json.dumps(plan))
    return folder


def test_the_sweep_counts_what_exploration_found_and_what_the_best_skills_kept(
    sweep: Path,
) -> None:
    (config,) = build_sweep_summary(sweep)["configs"]
    record = config["exploration"]
    history = [json.loads((sweep / f"seed{i}/history.json").read_text()) for i in (0, 1)]
    attempts = [sum(r["explore_attempts"] for r in h) for h in history]
    assert attempts[0] == 2 and attempts[1] >= 2  # both failed episodes explored, in each run
    assert [r["found"] for r in record["per_seed"]] == [2, 0]
    assert [r["self_found_in_best"] for r in record["per_seed"]] == [True, False]
    assert record["attempts"] == sum(attempts) and record["items"] == 4
    assert (record["found"], record["runs"], record["seeds_without_a_find"]) == (2, 2, [1])
    assert record["best_skills_with_self_found"] == 1
    assert record["ends"] == {"step_limit": sum(attempts) - 2, "solved": 2}  # how they ended
    assert [sum(r["ends"].values()) for r in record["per_seed"]] == attempts
    text = render_sweep_text(build_sweep_summary(sweep))
    assert (
        f"exploration: 2 of 4 failed train items solved in {sum(attempts)} attempts; runs with "
        "a success: 1 of 2 (none found: seed 1); best skills holding a self-found example: 1; "
        f"the attempts ended: {sum(attempts) - 2} ran out of steps, 2 solved"
    ) in text


def test_a_damaged_history_is_a_located_error_and_a_damaged_record_prints_nothing(
    sweep: Path, tmp_path: Path
) -> None:
    assert exploration_text(None) is None
    assert exploration_text({"attempts": "2", "items": 4, "found": 2, "runs": 2}) is None
    good = build_sweep_summary(sweep)["configs"][0]["exploration"]
    assert exploration_text({**good, "found": True}) is None
    assert exploration_text({**good, "seeds_without_a_find": "1"}) is None
    for ends in ("many", {"step_limit": "3"}, {"step_limit": 2.5}):  # damaged: no ends said
        said = exploration_text({**good, "ends": ends})
        assert said is not None and "ended" not in said
    assert "ended" not in (exploration_text({**good, "ends": {"solved": 2}}) or "ended")
    copy = tmp_path / "copy"
    (copy / "seed0").mkdir(parents=True)
    for name in ("config.json", "summary.json", "sweep.json"):
        source = sweep / ("seed0/" + name if name != "sweep.json" else name)
        (copy / ("seed0/" + name if name != "sweep.json" else name)).write_bytes(
            source.read_bytes()
        )
    (copy / "seed0/history.json").write_text('[{"step": "one"}]')
    with pytest.raises(RunDirError, match=r"seed0/history\.json: entry 0"):
        build_sweep_summary(copy)


def test_each_finished_run_has_its_row_read_from_its_own_files(sweep: Path) -> None:
    (config,) = build_sweep_summary(sweep)["configs"]
    rows = config["per_run"]
    assert [(r["seed"], r["split"]) for r in rows] == [(0, 0), (1, 1)]
    for r in rows:
        run = sweep / f"seed{r['seed']}"
        summary = json.loads((run / "summary.json").read_text())
        steps = json.loads((run / "history.json").read_text())
        assert r["explore"] == [
            {"step": s["step"], "found": s["explore_found"], "items": s["n_failures"],
             "attempts": s["explore_attempts"]}
            for s in steps
        ]  # fmt: skip
        assert r["accepted"] == [s["step"] for s in steps if s["accepted"]]
        assert r["val"] == [summary["val_initial"], summary["val_best"]]
        assert r["test"] == [summary["test_initial"], summary["test_best"]]
        roles = {k: int(v["calls"]) for k, v in summary["usage"].items() if k != "all"}
        assert r["calls"] == roles and roles["target"] > 0
        assert r["checks"] == {} and r["vs_placebo"] is None  # no check targets, no controls
        assert 0 < r["minutes"] < 10
    assert [sum(s["found"] for s in r["explore"]) for r in rows] == [2, 0]
    text = render_sweep_text(build_sweep_summary(sweep))
    header = "| seed (split) | exploration: failed train items solved, per step | steps accepted"
    assert header in text
    found = rows[0]["explore"][0]
    first = f"| 0 (0) | {found['found']} of {found['items']} in {found['attempts']} | "
    assert any(line.startswith(first) for line in text.splitlines())
    page = render_sweep_html(build_sweep_summary(sweep), {})  # the HTML report's table
    assert '<table class="runs">' in page and '<td class="l">0 (0)</td>' in page


def test_the_calls_of_every_row_list_the_roles_in_one_order(sweep: Path) -> None:
    """summary.json keeps the order in which a session first called each role: a run resumed
    in its check-target phase lists that role first. The row does not."""
    summary = json.loads((sweep / "seed0/summary.json").read_text())
    usage = {"judge": {"calls": 2}, "check_target": {"calls": 72}, "all": {"calls": 700},
             "target": {"calls": "x"}, "optimizer": {"calls": 16}}  # fmt: skip
    row = run_row(0, sweep / "seed0", summary | {"usage": usage})
    assert list(row["calls"].items()) == [("optimizer", 16), ("check_target", 72), ("judge", 2)]


def test_a_run_row_as_stored_prints_what_it_can_and_dashes_for_the_rest() -> None:
    assert run_lines(None) == [] and run_lines("rows") == [] and run_lines([1, "x"]) == []
    rows = [
        {"seed": 3, "split": 903, "explore": [{"step": 1, "found": 1, "items": 4,
         "attempts": 14}, {"step": 2, "items": 0}], "accepted": [1], "val": [0.0, 0.625],
         "test": [0.0, 0.96], "vs_placebo": 0.96,
         "checks": {"llamacpp:qwen2.5-coder-0.5b": [0.0, 0.25]},
         "calls": {"target": 640, "optimizer": 6}, "minutes": 31.6},
        {"seed": 4, "explore": "x", "accepted": "1", "val": [0.0], "test": [None, "1"],
         "vs_placebo": True, "checks": [], "calls": 7, "minutes": "long"},
    ]  # fmt: skip
    lines = run_lines(rows)
    assert lines[3] == (
        "| 3 (903) | 1 of 4 in 14; nothing failed | 1 | 0.00 → 0.62 | 0.00 → 0.96 | +0.96 | "
        "qwen2.5-coder-0.5b 0.00 → 0.25 | target 640, optimizer 6 | 32 |"
    )
    assert lines[4] == "| 4 | – | none | – | – → – | – | – | – | – |"


def test_the_minutes_of_a_run_sum_its_sessions_and_skip_what_is_not_a_timed_event(
    tmp_path: Path,
) -> None:
    events = tmp_path / "events.jsonl"
    assert run_minutes(tmp_path) is None  # no file
    rows = [
        {"t": "2026-11-29T10:00:00+00:00", "event": "run_start"},
        {"t": "2026-11-29T10:30:00+00:00", "event": "step"},
        {"t": "not a time", "event": "step"},
        {"t": "2026-11-29T23:00:00", "event": "step"},  # no zone: not read
        {"t": "2026-11-30T08:00:00+00:00", "event": "run_start"},  # resumed next day
        {"t": "2026-11-30T08:10:00+00:00", "event": "run_end"},
    ]
    text = "\n".join(json.dumps(r) for r in rows)
    events.write_text(f'{text}\n[1, 2]\n"t"\n{{broken\n' + "[" * 100_000 + "\n")
    assert run_minutes(tmp_path) == 40.0
    events.write_text("garbage\n")
    assert run_minutes(tmp_path) is None
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(text + "\n")
    events.unlink()
    events.symlink_to(elsewhere)  # a link is not the run's own file
    assert run_minutes(tmp_path) is None
