"""Check targets (``train.check_targets``) in whole runs with the shipped fakes: a candidate that
breaks another target is refused although the main target improves, one within tolerance is
accepted, an early-rejected candidate costs no check-target call, the test split reports each
check target, calls are metered under their own role and budgeted, and bad configs are clear
errors. The fake optimizer proposes a harmful rule first, then the helpful one
(``GOOD_RULE``, which holds "UPPERCASE"); ``FakeCheckTarget`` answers every word right unless
the skill holds its ``breaks_on`` text."""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from skillgrad.cli.main import app
from skillgrad.config import load_config
from skillgrad.errors import BudgetExceeded, ConfigError
from skillgrad.runs.cache import CallCache, TargetResults
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.testing import ToyTask
from skillgrad.types import Score, Trajectory

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_e2e import GOOD_RULE, RULES_ONLY, make_optimizer, make_target

FAKES = Path(__file__).parents[1] / "fakes_e2e.py"


def check(breaks_on: str = "", spoil: list[str] | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {"breaks_on": breaks_on, "spoil": spoil or []}
    return {"provider": "function", "model": f"{FAKES}:FakeCheckTarget", "options": options}


def _cfg(tmp_path: Path, checks: list[Any], **train: Any) -> Any:
    base = {"num_epochs": 1, "batch_size": 4, "patience": 5, "learning_rate": 4, **RULES_ONLY}
    return load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {**base, "check_targets": checks, **train},
        }
    )


def _run(tmp_path: Path, checks: list[Any], **train: Any) -> Any:
    cfg = _cfg(tmp_path, checks, **train)
    return run_training(cfg, optimizer=make_optimizer(), target=make_target())


def _ledger(run: Path) -> list[tuple[str, str, int]]:
    db = sqlite3.connect(run / "calls.sqlite")
    try:
        return db.execute("SELECT role, stage, step FROM calls ORDER BY rowid").fetchall()
    finally:
        db.close()


def test_a_candidate_that_breaks_a_check_target_is_refused(tmp_path: Path) -> None:
    result = _run(tmp_path, [check("UPPERCASE")])
    run, name = result.run_dir, "function:fake-check-UPPERCASE-0"
    history = read_json(run / "history.json")
    good = [r for r in history if r["candidate_score"] == 1.0]
    assert good, "the main target improves with the helpful rule (val 0 -> 1)"
    assert not any(r["accepted"] for r in history)  # ... and it is refused every time
    step = good[0]
    [c] = step["check_targets"]
    assert c["target"] == name and c["verdict"] == "refused" and c["incumbent_score"] == 1.0
    assert c["candidate_score"] == 0.0 and c["early_rejected"]  # one lost item settles it
    assert step["gate_reason"].startswith(f"refused: loses more than 0.02 on {name}")
    gate = read_json(run / f"steps/step_{step['step']:04d}/gate.json")
    assert gate["check_targets"][0]["verdict"] == "refused"
    assert not gate["result"]["accepted"] and gate["result"]["candidate_score"] == 1.0
    # the buffer shows the optimizer the loss on the check target
    buffer = read_json(run / "runtime_state.json")["rejected_buffer"]
    entry = next(e for e in buffer if e["step"] == step["step"])
    assert (entry["incumbent"], entry["candidate"]) == (1.0, 0.0)
    s = result.summary
    assert s["val_best"] == s["val_initial"] == 0.0
    assert s["check_targets"]["refused_steps"][0]["target"] == name
    assert s["check_targets"]["targets"] == [
        {"target": name, "test_initial": 1.0, "test_best": 1.0, "test_change": 0.0}
    ]
    report = (run / "report.md").read_text()
    assert "## Check targets" in report and f"loses more than 0.02 on {name}" in report
    assert "| check_target/check |" in report and "| check_target/test |" in report
    assert s["usage"]["check_target"]["calls"] > 0
    # the dashboard shows the refusal as the step's verdict, and its reason with the gate
    from starlette.testclient import TestClient

    from skillgrad.dashboard import create_app

    client = TestClient(create_app(run.parent), base_url="http://127.0.0.1")
    points = client.get(f"/api/run/{run.name}").json()["points"]
    verdict = next(p["verdict"] for p in points if p["step"] == step["step"])
    assert verdict.startswith(f"refused: loses more than 0.02 on {name}")
    assert f"loses more than 0.02 on {name}" in client.get(f"/run/{run.name}").text


def test_check_targets_are_evaluated_only_for_candidates_the_main_gate_accepts(
    tmp_path: Path,
) -> None:
    result = _run(tmp_path, [check("UPPERCASE")])
    history = read_json(result.run_dir / "history.json")
    ledger = _ledger(result.run_dir)
    for r in history:
        calls = [x for x in ledger if x[0] == "check_target" and x[2] == r["step"]]
        if r["candidate_score"] == 1.0:  # the main gate accepted it: the check target ran
            assert calls and {x[1] for x in calls} == {"check"}
        else:  # rejected by the main gate (or no candidate): not one check-target call
            assert calls == [] and r["check_targets"] == []
    assert any(r["candidate_score"] == 0.0 for r in history)  # such a step happened
    # within each checked step, every main-target gate call came before the first check call
    step = next(r["step"] for r in history if r["candidate_score"] == 1.0)
    rows = [x for x in ledger if x[2] == step]
    first_check = next(i for i, x in enumerate(rows) if x[0] == "check_target")
    assert all(x[0] != "target" for x in rows[first_check:])


def test_a_loss_within_the_tolerance_is_accepted_and_one_above_it_refused(
    tmp_path: Path,
) -> None:
    # the check target loses 1 of 6 val items: the last one evaluated (ties in split order),
    # so no early stop shortens the refusal
    word = ToyTask().load_split("val")[-1].input
    spoiler = check("UPPERCASE", [word])
    ok = _run(tmp_path / "a", [spoiler], check_targets_tolerance=0.2, check_targets_rule="strict")
    history = read_json(ok.run_dir / "history.json")
    accepted = [r for r in history if r["accepted"]]
    assert accepted and GOOD_RULE in (ok.run_dir / "best_skill.md").read_text()
    [c] = accepted[0]["check_targets"]
    assert c["verdict"] == "passed" and c["mean_diff"] == pytest.approx(-1 / 6)
    assert c["evaluated"] == c["total"] == 6 and c["reason"].startswith("passes on")
    [row] = ok.summary["check_targets"]["targets"]
    assert row["test_change"] == 0.0  # the spoiled word is a val word, not a test word

    tight = _run(
        tmp_path / "b", [spoiler], check_targets_tolerance=0.1, check_targets_rule="strict"
    )
    history = read_json(tight.run_dir / "history.json")
    assert not any(r["accepted"] for r in history)
    refused = [r for r in history if r["check_targets"]]
    assert refused and refused[0]["gate_reason"].startswith(
        "refused: loses 0.167 on function:fake-check-UPPERCASE-1 (main target: accepted"
    )
    [c] = refused[0]["check_targets"]
    assert c["evaluated"] == 6 and not c["early_rejected"]


def test_the_paired_rule_lets_one_items_noise_through(tmp_path: Path) -> None:
    """The default rule: losing 1 of 6 val items (0.167 > 0.1) is not an established loss, so
    the candidate passes where the strict rule refused it above."""
    word = ToyTask().load_split("val")[-1].input
    run = _run(tmp_path, [check("UPPERCASE", [word])], check_targets_tolerance=0.1)
    history = read_json(run.run_dir / "history.json")
    accepted = [r for r in history if r["accepted"]]
    assert accepted and GOOD_RULE in (run.run_dir / "best_skill.md").read_text()
    [c] = accepted[0]["check_targets"]
    assert c["verdict"] == "passed" and c["mean_diff"] == pytest.approx(-1 / 6)
    assert run.summary["check_targets"]["rule"] == "paired"


def test_a_steady_check_target_lets_the_improvement_through(tmp_path: Path) -> None:
    plain = _run(tmp_path / "plain", [])
    checked = _run(tmp_path / "checked", [check(), check("never in the skill")])
    assert checked.summary["val_best"] == plain.summary["val_best"] == 1.0
    history = read_json(checked.run_dir / "history.json")
    step = next(r for r in history if r["accepted"])
    assert [c["verdict"] for c in step["check_targets"]] == ["passed", "passed"]
    targets = checked.summary["check_targets"]["targets"]
    assert [t["test_best"] for t in targets] == [1.0, 1.0]
    assert plain.summary["check_targets"] is None
    assert "check_target" not in plain.summary["usage"]


def test_the_second_check_target_is_not_evaluated_after_the_first_refuses(
    tmp_path: Path,
) -> None:
    result = _run(tmp_path, [check("UPPERCASE"), check()])
    step = next(r for r in read_json(result.run_dir / "history.json") if r["check_targets"])
    first, second = step["check_targets"]
    assert first["verdict"] == "refused" and second["verdict"] == "not evaluated"
    assert "fake-check-UPPERCASE-0" in second["reason"]


def test_the_slow_update_goes_through_the_check_targets(tmp_path: Path) -> None:
    # --no-gate: the slow update's guidance is evaluated in full, on the check target too
    result = _run(tmp_path, [check()], num_epochs=2, gate=False)
    history = read_json(result.run_dir / "history.json")
    slow = next(r for r in history if r["kind"] == "slow_update")
    [c] = slow["check_targets"]
    assert c["verdict"] == "passed" and c["evaluated"] == c["total"] == 6
    assert c["reason"].startswith("not decided (--no-gate) on function:fake-check-steady-0")
    stages = {x[1] for x in _ledger(result.run_dir) if x[0] == "check_target"}
    assert stages == {"check", "test"}


def test_check_target_calls_are_budgeted(tmp_path: Path) -> None:
    reference = _run(tmp_path / "ref", [check("UPPERCASE")])
    roles = [x[0] for x in _ledger(reference.run_dir)]
    allowed = roles.index("check_target")  # every call before the first check-target call
    cfg = _cfg(tmp_path / "cut", [check("UPPERCASE")]).model_copy(deep=True)
    cfg.budget.max_calls = allowed
    with pytest.raises(BudgetExceeded):
        run_training(cfg, optimizer=make_optimizer(), target=make_target())
    ledger = _ledger(tmp_path / "cut" / "run")
    assert len(ledger) == allowed and all(x[0] != "check_target" for x in ledger)
    summary = read_json(tmp_path / "cut" / "run" / "summary.json")
    assert summary["status"] == "budget_exhausted"


def test_each_target_has_its_own_result_cache_entries(tmp_path: Path) -> None:
    store = CallCache(tmp_path / "calls.sqlite")
    try:
        views = [TargetResults(store, "llamacpp:smollm2-135m"), TargetResults(store, "x:y")]
        for i, where in enumerate([store, *views]):
            where.put_result(Trajectory("v-0", "abc", (), f"out{i}", Score(i / 2, True)))
        assert [w.get_result("abc", "v-0").output for w in (store, *views)] == [  # type: ignore[union-attr]
            "out0",
            "out1",
            "out2",
        ]
        assert views[1].get_result("abc", "v-0").skill_hash == "abc"  # type: ignore[union-attr]
        assert views[0].get_result("abc", "v-1") is None
        rows = store._db.execute("SELECT COUNT(DISTINCT skill_hash) FROM results").fetchone()
        assert rows[0] == 3
    finally:
        store.close()


@pytest.mark.parametrize(
    ("checks", "message"),
    [
        (["nosuch:model"], "train.check_targets[0]: unknown model provider 'nosuch'"),
        (["llamacpp:smollm2-135m"], "is the main target (models.target)"),
        (["function:a.py:x", "function:a.py:x"], "train.check_targets[1]: 'function:a.py:x'"),
        ("llamacpp:smollm2-135m", "expected a list of models"),
    ],
)
def test_bad_check_targets_are_config_errors(checks: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(data={"train": {"check_targets": checks}})


def test_the_cli_exits_2_on_a_bad_check_target(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("train:\n  check_targets: [llamacpp:smollm2-135m]\n")
    result = CliRunner().invoke(app, ["train", str(config), "--quiet"])
    assert result.exit_code == 2
    assert "is the main target (models.target)" in result.output
    assert "Traceback" not in result.output


def test_a_check_target_answering_under_the_main_targets_name_is_refused(
    tmp_path: Path,
) -> None:
    same = {"provider": "function", "model": f"{FAKES}:FakeTarget"}  # named function:fake-target
    cfg = _cfg(tmp_path, [same])
    with pytest.raises(ConfigError, match="answers as 'function:fake-target'"):
        run_training(cfg, optimizer=make_optimizer(), target=make_target())
    assert not (tmp_path / "run").exists()  # nothing ran: nothing is left behind
    fixed = _run(tmp_path, [check()])  # so the corrected config starts there afresh
    assert fixed.summary["status"] == "finished"
