"""Several candidates per step (``train.candidates_per_step``) in whole runs with the shipped
fakes: the one candidate that helps is kept, every candidate is recorded, identical candidates
are gated once, the rejected ones feed the rejected-edit buffer, check targets pick among the
accepted ones, and one candidate per step is the step of method.md."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

from skillgrad.config import load_config
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.testing import FunctionBackend, optimizer_call_kind, rules_reply
from skillgrad.train.candidates import by_val_mean, candidate_seed
from skillgrad.types import ChatRequest

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakes_e2e import (
    BAD_RULE,
    FAKES_PATH,
    GOOD_RULE,
    NEUTRAL_RULE,
    make_optimizer,
    make_target,
    optimizer_reply,
)

OTHER_GOOD = "Write the word in UPPERCASE letters."  # helps the main target as much


def seeded_optimizer(rules: dict[int, str], default: str) -> FunctionBackend:
    """A fake optimizer whose reflections propose ``rules[seed]`` (else ``default``)."""

    def reply(request: ChatRequest) -> Any:
        if optimizer_call_kind(request) in ("reflect", "deep_reflect"):
            return rules_reply(rules.get(request.seed or 0, default))
        return optimizer_reply(request)

    return FunctionBackend(reply, "function:fake-seeded-optimizer")


def step1(*rules: str) -> dict[int, str]:
    """Candidate k of step 1 (train.seed 0) proposes ``rules[k - 1]``."""
    return {candidate_seed(0, 1, k): rule for k, rule in enumerate(rules, start=1)}


def _run(tmp_path: Path, optimizer: FunctionBackend, **train: Any) -> Any:
    base = {"num_epochs": 1, "batch_size": 4, "patience": 5, "learning_rate": 4}
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {**base, **train},
        }
    )
    return run_training(cfg, optimizer=optimizer, target=make_target())


def _target_calls(run: Path, step: int, stage: str = "gate") -> int:
    db = sqlite3.connect(run / "calls.sqlite")
    try:
        sql = "SELECT COUNT(*) FROM calls WHERE role='target' AND step=? AND stage=?"
        return int(db.execute(sql, (step, stage)).fetchone()[0])
    finally:
        db.close()


def test_of_three_candidates_the_one_that_helps_is_kept(tmp_path: Path) -> None:
    optimizer = seeded_optimizer(step1(BAD_RULE, NEUTRAL_RULE, GOOD_RULE), NEUTRAL_RULE)
    result = _run(tmp_path, optimizer, candidates_per_step=3, candidate_temperature=0.7)
    run = result.run_dir
    first = read_json(run / "history.json")[0]
    assert first["accepted"] and GOOD_RULE in (run / "best_skill.md").read_text()
    cands = first["candidates"]
    assert [c["k"] for c in cands] == [1, 2, 3]
    assert [c["kept"] for c in cands] == [False, False, True]
    assert cands[0]["verdict"] in ("rejected", "early-rejected")
    assert cands[1]["verdict"] in ("rejected", "early-rejected")
    assert cands[2]["verdict"] == "kept" and cands[2]["candidate_score"] == 1.0
    # each reflection sampled at the candidate temperature with its own seed
    reflections = [r for r in optimizer.calls if optimizer_call_kind(r) == "reflect"]
    assert {r.temperature for r in reflections} == {0.7}
    assert {c["seed"] for c in cands} <= {r.seed for r in reflections}
    # every candidate's files, and the step's own files describe the kept one
    step_dir = run / "steps/step_0001"
    for k, rule in ((1, BAD_RULE), (2, NEUTRAL_RULE), (3, GOOD_RULE)):
        folder = step_dir / "candidates" / f"k{k}"
        assert rule in (folder / "candidate.md").read_text()
        assert read_json(folder / "apply_report.json")[0]["status"] == "applied"
        assert read_json(folder / "gate.json")["result"]["accepted"] is (k == 3)
    assert (step_dir / "candidate.md").read_text() == (
        step_dir / "candidates/k3/candidate.md"
    ).read_text()
    assert read_json(step_dir / "candidates.json") == cands
    # the rejected candidates' edits go to the rejected-edit buffer
    buffer = read_json(run / "runtime_state.json")["rejected_buffer"]
    texts = [e["content"] for entry in buffer if entry["step"] == 1 for e in entry["edits"]]
    assert texts == [f"- {BAD_RULE}", f"- {NEUTRAL_RULE}"]
    report = (run / "report.md").read_text()
    assert "## Candidates (3 per step)" in report and "k3 kept (1.000)" in report


def test_identical_candidates_are_gated_once(tmp_path: Path) -> None:
    one = _run(tmp_path / "one", seeded_optimizer({}, BAD_RULE))
    three = _run(tmp_path / "three", seeded_optimizer({}, BAD_RULE), candidates_per_step=3)
    cands = read_json(three.run_dir / "history.json")[0]["candidates"]
    assert [c["verdict"] for c in cands[1:]] == ["duplicate of k1", "duplicate of k1"]
    assert [c["duplicate_of"] for c in cands] == [None, 1, 1]
    gate = read_json(three.run_dir / "steps/step_0001/candidates/k2/gate.json")
    assert gate == {"result": None, "reason": "duplicate of candidate k1: not gated again"}
    assert _target_calls(three.run_dir, 1) == _target_calls(one.run_dir, 1) > 0
    buffer = read_json(three.run_dir / "runtime_state.json")["rejected_buffer"]
    assert len([e for e in buffer if e["step"] == 1]) == 1  # a duplicate adds nothing


def test_check_targets_pick_the_best_candidate_that_passes_them(tmp_path: Path) -> None:
    # both good rules give the main target 1.0; the check target loses on "Always" (GOOD_RULE)
    check = {
        "provider": "function",
        "model": f"{FAKES_PATH}:FakeCheckTarget",
        "options": {"breaks_on": "Always"},
    }
    optimizer = seeded_optimizer(step1(GOOD_RULE, OTHER_GOOD, BAD_RULE), NEUTRAL_RULE)
    result = _run(tmp_path, optimizer, candidates_per_step=3, check_targets=[check])
    run = result.run_dir
    first = read_json(run / "history.json")[0]
    verdicts = [c["verdict"] for c in first["candidates"]]
    assert verdicts[0].startswith("refused: loses more than 0.02 on function:fake-check-Always")
    assert verdicts[1] == "kept" and verdicts[2] in ("rejected", "early-rejected")
    assert OTHER_GOOD in (run / "best_skill.md").read_text()
    assert [c["verdict"] for c in first["check_targets"]] == ["passed"]  # the kept one's
    k1 = read_json(run / "steps/step_0001/candidates/k1/gate.json")
    assert k1["check_targets"][0]["verdict"] == "refused"
    k3 = read_json(run / "steps/step_0001/candidates/k3/gate.json")
    assert "check_targets" not in k3  # rejected by the main gate: never checked


def test_one_candidate_per_step_is_the_plain_step(tmp_path: Path) -> None:
    result = run_training(
        load_config(
            data={
                "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
                "train": {"num_epochs": 1, "batch_size": 4},
            }
        ),
        optimizer=make_optimizer(),
        target=make_target(),
    )
    run = result.run_dir
    assert not list(run.glob("steps/*/candidates*"))
    history = read_json(run / "history.json")
    assert all(r["candidates"] == [] and r["check_targets"] == [] for r in history)
    assert result.summary["candidates_per_step"] == 1
    assert "## Candidates" not in (run / "report.md").read_text()


def test_preflight_bounds_the_usage_with_candidates_and_check_targets(tmp_path: Path) -> None:
    from skillgrad.runs.io import read_jsonl

    check = {"provider": "function", "model": f"{FAKES_PATH}:FakeCheckTarget"}
    optimizer = seeded_optimizer(step1(BAD_RULE, NEUTRAL_RULE, GOOD_RULE), NEUTRAL_RULE)
    result = _run(tmp_path, optimizer, candidates_per_step=3, check_targets=[check])
    pre = next(e for e in read_jsonl(result.run_dir / "events.jsonl") if e["event"] == "preflight")
    usage = result.summary["usage"]
    for role in ("optimizer", "target", "check_target"):
        assert pre["calls"][role] >= usage[role]["calls"] > 0, role


def test_ties_in_val_mean_keep_the_lower_k() -> None:
    from skillgrad.train.candidates import Candidate, Proposal
    from skillgrad.train.gate import GateOutcome
    from skillgrad.types import GateResult

    def cand(k: int, score: float, accepted: bool) -> Candidate:
        result = GateResult(accepted, 0.0, score, 4, 4)
        c = Candidate(k, k, Proposal(None, None, None), f"s{k}", [])  # type: ignore[arg-type]
        c.outcome = GateOutcome(result, (), {}, {})
        return c

    ranked = by_val_mean([cand(1, 0.5, True), cand(2, 0.75, True), cand(3, 0.75, True)])
    assert [c.k for c in ranked] == [2, 3, 1]
    assert by_val_mean([cand(1, 1.0, False)]) == []
