"""Control arms and the verifier-leak firewall through the real CLI with the shipped fakes:
the placebo and empty arms scored on the same test items (a run, and a sweep with --controls);
a scorer's evidence never reaches the optimizer, and a rule copying it is refused."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from typer.testing import CliRunner

from skillgrad.cli import app
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.train.screens.firewall import evidence_leaks, fragments
from skillgrad.train.trust.placebo import SENTENCES, placebo_skill

FAKES = Path(__file__).parent / "fakes_trust.py"
TOY = Path(__file__).parents[1] / "fakes_e2e.py"
runner = CliRunner()
sys.path.insert(0, str(Path(__file__).parents[1] / "sweep"))


def _config(tmp_path: Path, task: str, optimizer: str, train: str) -> Path:
    path = tmp_path / "arms.yaml"
    path.write_text(
        f"""
train: {{batch_size: 4, num_epochs: 1, examples: off, explore: off, {train}}}
models:
  optimizer: {{provider: function, model: "{optimizer}"}}
  target: {{provider: function, model: "{TOY}:FakeTarget"}}
env: {{task: "{task}", output_root: "{tmp_path / "runs"}", options: {{n_test: 5}}}}
"""
    )
    return path


def _requests(run: Path, role: str) -> list[dict]:
    db = sqlite3.connect(run / "calls.sqlite")
    try:
        rows = db.execute("SELECT request FROM calls WHERE role=?", (role,)).fetchall()
    finally:
        db.close()
    return [json.loads(r[0]) for r in rows]


def test_the_placebo_and_empty_arms_are_scored_on_the_same_test_items(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "toy", f"{TOY}:FakeOptimizer", "controls: true")
    result = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs/arms"
    controls = read_json(run / "summary.json")["controls"]
    assert controls["items"] == 5 and controls["test_empty"] == 0.0
    # the fake target answers right only under the rule: the placebo gives nothing
    assert controls["test_placebo"] == 0.0 and controls["test_gain_vs_placebo"] == 1.0
    assert controls["test_gain_vs_empty"] == 1.0 and controls["worse_than_initial"] == []
    assert abs(controls["placebo_tokens"] - controls["best_tokens"]) <= 3
    splits = read_json(run / "splits.json")
    placebo_words = set()
    for req in _requests(run, "target"):
        system = next((m["content"] for m in req["messages"] if m["role"] == "system"), "")
        if system.startswith(SENTENCES[0][:20]):
            user = [m["content"] for m in req["messages"] if m["role"] == "user"][-1]
            placebo_words.add(user.removeprefix("Word: ").strip())
    test_words = {w.lower() for w in placebo_words}
    assert len(placebo_words) == len(splits["test"]) == 5 and len(test_words) == 5
    report = (run / "report.md").read_text()
    assert "## Control arms (test split)" in report and "| placebo | 0.000 | +1.000 |" in report
    from skillgrad.report.html import write_html_report

    page = write_html_report(run).read_text()
    assert 'id="controls"' in page and 'id="noise-floor"' in page


def test_placebo_text_is_deterministic_content_free_and_of_the_asked_length() -> None:
    def count(text: str) -> int:
        return len(text.split())

    text = placebo_skill(57, count)
    assert count(text) == 57 and text == placebo_skill(57, count)
    assert placebo_skill(0, count) == "" and all(s.split()[0] in text for s in SENTENCES)


def test_a_sweep_with_controls_reports_gains_over_empty_and_placebo(tmp_path: Path) -> None:
    from sweep_helpers import run_sweep, sweep_cmd, write_config

    cfg = write_config(tmp_path, latency=0.0, epochs=1)
    out = tmp_path / "sweep"
    done = run_sweep(sweep_cmd(cfg, out, "--seeds", "2", "--controls", "--workers", "1"))
    assert done.returncode == 0, done.stderr
    summary = read_json(out / "sweep_summary.json")
    config = summary["configs"][0]
    for key in ("test_gain_vs_empty", "test_gain_vs_placebo"):
        stat = config[key]
        assert set(stat) >= {"mean", "ci_low", "ci_high", "values"} and len(stat["values"]) == 2
    assert config["made_worse"] == [] and "test_gain_vs_placebo" in done.stdout


def test_a_rule_copying_the_checkers_pattern_is_refused_and_never_learned(
    tmp_path: Path,
) -> None:
    task = f"{FAKES}:CheckedToy"
    cfg = _config(tmp_path, task, f"{FAKES}:PatternCopyingOptimizer", "patience: 2")
    result = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs/arms"
    # the optimizer never read the evidence: neither the pattern nor the "gold answer" line
    prompts = json.dumps(_requests(run, "optimizer"))
    assert "checker pattern" not in prompts and "[A-Z]{3,12}" not in prompts
    assert "the answer does not have the required form" in prompts  # the feedback it may read
    # the copying rule was dropped before selection, with the reason said
    warnings = [e["message"] for e in read_jsonl(run / "events.jsonl") if e["event"] == "warning"]
    assert any("scorer's evidence dropped before selection" in w for w in warnings)
    history = read_json(run / "history.json")
    assert history and "copy train/val data, a scorer's evidence or" in history[0]["stall_reason"]
    assert "[A-Z]" not in (run / "best_skill.md").read_text()
    # the evidence is kept for the audit, in every scored trajectory
    rows = [
        json.loads(x)
        for x in (run / "steps/step_0001/trajectories.jsonl").read_text().split("\n")
        if x
    ]
    assert rows and all("checker pattern" in r["score"]["evidence"] for r in rows)


def test_a_candidate_line_copying_evidence_is_found_by_fragment_and_by_span() -> None:
    assert fragments("checker pattern /^[A-Z]{3,12}$/ (fullmatch)") == {"^[a-z]{3,12}$"}
    evidence = [
        ("val-0", "checker pattern /^[A-Z]{3,12}$/"),
        ("val-1#s1", "expected calls: lookup(city, date) then book(hotel) for the whole stay"),
        ("test-0", "checker pattern /^TEST[0-9]+$/"),  # a test item: not learnable anyway
    ]
    splits = {"val-0": "val", "val-1": "val"}
    skill = (
        "- Match ^[A-Z]{3,12}$ exactly.\n"
        "- Expected calls: lookup(city, date) then book(hotel) for the whole stay.\n"
    )
    leaks = evidence_leaks(skill, evidence, splits, ngram=8)
    assert {(x.line, x.item_id, x.source) for x in leaks} >= {
        (1, "val-0", "evidence"),
        (2, "val-1", "evidence"),
    }
    assert evidence_leaks(skill, evidence, splits, 8, exempt=skill) == ()
    assert evidence_leaks("- Keep the reply short.\n", evidence, splits, 8) == ()


def test_a_user_scorer_may_declare_its_feedback_evidence() -> None:
    """Then the optimizer reads only the verdict; plain feedback is learning-safe as it is."""
    from skillgrad.scorers.base import as_scorer
    from skillgrad.types import Item, Score

    class Checker:
        feedback_is_evidence = True

        def score(self, output: str, item: Item) -> Score:
            return Score(0.0, False, "expected call book(hotel='Ritz')", "gold: Ritz")

    class Plain:
        def score(self, output: str, item: Item) -> Score:
            return Score(0.0, False, "answer in one word")

    item = Item("x", "in", "out")
    hidden = as_scorer(Checker()).score("no", item)
    assert hidden.feedback == "failed (feedback withheld)"
    assert "book(hotel='Ritz')" in hidden.evidence and "gold: Ritz" in hidden.evidence
    plain = as_scorer(Plain()).score("no", item)  # plain feedback: learning-safe as it is
    assert plain.feedback == "answer in one word" and plain.evidence == ""
