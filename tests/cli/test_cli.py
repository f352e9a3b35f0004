"""The CLI end to end with the shipped fakes: train, resume, report, eval, and its errors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skillgrad.cli.main import app
from skillgrad.runs.provenance import code_provenance

FAKES = Path(__file__).parents[1] / "fakes_e2e.py"
runner = CliRunner()


def _config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text(
        f"""
train: {{num_epochs: 2, batch_size: 4}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: toy, output_root: "{tmp_path / "runs"}"}}
{extra}
"""
    )
    return path


def test_train_then_report_then_eval(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    result = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs/toy"
    assert "validation score: 0.000 -> 1.000" in result.output
    again = runner.invoke(app, ["train", str(cfg), "--quiet"])  # resumes a finished run: no-op
    assert again.exit_code == 0 and (run / "summary.json").exists()
    report = runner.invoke(app, ["report", str(run)])
    assert report.exit_code == 0 and "test score (held out): initial 0.000 vs best 1.000" in (
        report.output
    )
    skill = run / "best_skill.md"
    evaluated = runner.invoke(app, ["eval", str(cfg), "--skill", str(skill), "--split", "test"])
    assert evaluated.exit_code == 0, evaluated.output
    assert "mean score 1.0000" in evaluated.output
    empty = tmp_path / "empty.md"
    empty.write_text("")
    zero = runner.invoke(app, ["eval", str(cfg), "--skill", str(empty), "--split", "val"])
    assert "mean score 0.0000" in zero.output


def test_fresh_starts_a_new_directory(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "")
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    assert runner.invoke(app, ["train", str(cfg), "--quiet", "--fresh"]).exit_code == 0
    assert (tmp_path / "runs/toy-2/summary.json").exists()


def test_changed_config_on_existing_run_is_refused(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    changed = runner.invoke(app, ["train", str(cfg), "--quiet", "--set", "train.learning_rate=9"])
    assert changed.exit_code == 2
    assert "different config" in changed.output and "--fresh" in changed.output


def test_a_run_from_before_a_setting_existed_resumes_while_it_is_default(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    stored = tmp_path / "runs/toy/config.json"
    data = json.loads(stored.read_text())
    del data["train"]["check_targets"], data["train"]["reask_temperature"]
    stored.write_text(json.dumps(data))  # as written by a version without these settings
    again = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert again.exit_code == 0, again.output
    changed = runner.invoke(
        app, ["train", str(cfg), "--quiet", "--set", "train.reask_temperature=1.0"]
    )
    # the resumed run's config.json now names the setting (at its default)
    assert changed.exit_code == 2 and "train.reask_temperature: 0.7 -> 1.0" in changed.output


def test_unknown_key_exits_2_with_did_you_mean(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "hardware: {rollout_worker: 3}")
    result = runner.invoke(app, ["train", str(cfg)])
    assert result.exit_code == 2
    assert "did you mean 'hardware.rollout_workers'" in result.output


def test_budget_stop_exits_3_and_resumes_when_raised(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "budget: {max_calls: 12}")
    stopped = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert stopped.exit_code == 3 and "budget.max_calls=12" in stopped.output
    summary = (tmp_path / "runs/toy/summary.json").read_text()
    assert '"budget_exhausted"' in summary
    resumed = runner.invoke(app, ["train", str(cfg), "--quiet", "--set", "budget.max_calls=500"])
    assert resumed.exit_code == 0, resumed.output
    assert '"finished"' in (tmp_path / "runs/toy/summary.json").read_text()


def test_report_shows_cost_per_role_and_stage(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    report = (tmp_path / "runs/toy/report.md").read_text()
    for row in ("| optimizer |", "| target |", "| target/rollout |", "| target/gate |",
                "| optimizer/reflect |", "| target/baseline |", "| target/test |"):  # fmt: skip
        assert row in report, row


def test_error_text_is_printed_verbatim(tmp_path: Path) -> None:
    """No Rich markup or emoji codes are applied to error messages (':m:' stays ':m:')."""
    import contextlib
    import io

    from skillgrad.cli.console import print_error

    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        print_error(ValueError("openai_compatible:m: gave up; ids ['v1'] [bold]x[/bold]"))
    assert "openai_compatible:m: gave up; ids ['v1'] [bold]x[/bold]" in buf.getvalue()


def test_config_command_prints_the_resolved_config(tmp_path: Path) -> None:
    import yaml

    cfg = _config(tmp_path)
    result = runner.invoke(app, ["config", str(cfg), "--set", "train.learning_rate=7"])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.output)
    assert data["train"]["learning_rate"] == 7 and data["train"]["batch_size"] == 4
    assert data["hardware"]["rollout_workers"] == 4  # defaults filled in
    bad = runner.invoke(app, ["config", "--set", "train.bach_size=3"])
    assert bad.exit_code == 2 and "did you mean 'train.batch_size'" in bad.output


def test_endpoint_down_stops_cleanly_and_resumes_when_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _config(tmp_path)
    monkeypatch.setenv("FAKE_TARGET_DOWN", "1")
    down = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert down.exit_code == 2
    assert "every one of 6 baseline items failed" in down.output
    assert "fake endpoint down" in down.output and "re-run to resume" in down.output
    monkeypatch.delenv("FAKE_TARGET_DOWN")
    back = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert back.exit_code == 0, back.output
    assert '"finished"' in (tmp_path / "runs/toy/summary.json").read_text()


def test_resume_may_change_where_a_model_is_reached_but_not_which(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "budget: {max_calls: 12}")
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 3
    moved = ["--set", "models.target.timeout_s=30", "--set", "budget.max_calls=999"]
    assert runner.invoke(app, ["train", str(cfg), "--quiet", *moved]).exit_code == 0
    other = runner.invoke(app, ["train", str(cfg), "--quiet", "--set", "models.target.model=x"])
    assert other.exit_code == 2 and "models.target.model" in other.output


def test_rich_progress_shows_items_score_tokens_and_cost() -> None:
    import io

    from rich.console import Console

    from skillgrad.cli.console import RichProgress

    buf = io.StringIO()
    progress = RichProgress(Console(file=buf, force_terminal=True, width=160))
    progress.set_usage_source(lambda: {"prompt_tokens": 1200, "completion_tokens": 34, "cost": 0.5})
    with progress:
        progress.start("rollout", 4)
        progress.advance("rollout", info="1.0")
        progress.advance("rollout", info="0.0")
        progress._bars.refresh()
        shown = buf.getvalue()
    assert "rollout" in shown and "2/4" in shown
    assert "mean score 0.500" in shown and "1,234 tok" in shown and "$0.5000" in shown


def test_missing_extra_names_the_install_command(tmp_path: Path) -> None:
    """Without matplotlib (hidden from a real subprocess), --html says what to install."""
    import subprocess
    import sys

    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    code = (
        "import sys; sys.modules['matplotlib'] = None; from skillgrad.cli.main import app; "
        f"app(['report', {str(tmp_path / 'runs/toy')!r}, '--html'])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'skillgrad[report]'" in done.stderr and "Traceback" not in done.stderr


def test_eval_against_a_baseline_pairs_the_items(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    skill = tmp_path / "runs/toy/best_skill.md"
    empty = tmp_path / "empty.md"
    empty.write_text("")
    out = tmp_path / "paired.json"
    args = ["eval", str(cfg), "--skill", str(skill), "--baseline", str(empty), "--split", "test"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    pair, n = data["paired"], data["n"]
    assert data["baseline"]["mean_score"] == 0.0 and data["mean_score"] == 1.0
    assert (pair["n_pairs"], pair["wins"], pair["losses"], pair["ties"]) == (n, n, 0, 0)
    assert pair["mean_diff"] == 1.0 and pair["missing_pairs"] == 0
    assert data["code"] == code_provenance().to_json()  # which code produced the numbers
    assert pair["p_value"] == pytest.approx(2 / 2**n)  # exact: all +1 or all -1 of 2^n signs
    assert f"difference +1.0000 [95% CI +1.0000, +1.0000] over {n} items, +{n} / -0 / =0" in (
        result.output.replace("\n", " ")
    )
    same = runner.invoke(app, ["eval", str(cfg), "--skill", str(empty), "--baseline", str(empty)])
    assert same.exit_code == 0 and "difference +0.0000" in same.output and "p = 1" in same.output
    missing = runner.invoke(app, [*args[:-2], "--baseline", str(tmp_path / "nope.md")])
    assert missing.exit_code == 2 and "nope.md" in missing.output


def test_paired_comparison_leaves_out_items_either_skill_could_not_score() -> None:
    from skillgrad.evaluate import paired_comparison

    ours = {"a": {"score": 1.0}, "b": {"score": 0.5}, "c": {"score": 0.0, "infra_error": "x"}}
    theirs = {"a": {"score": 0.0}, "b": {"score": 0.5}, "c": {"score": 1.0}, "d": {"score": 1}}
    pair = paired_comparison(
        {"split": "val", "skill": "new.md", "items": ours},
        {"split": "val", "skill": "old.md", "items": theirs},
    )
    assert (pair["n_pairs"], pair["wins"], pair["losses"], pair["ties"]) == (2, 1, 0, 1)
    assert pair["mean_diff"] == 0.5 and pair["missing_pairs"] == 2
    low, high = pair["interval_95"]
    assert low < 0.5 < high  # two items: a wide Student-t interval around the mean
    assert pair["comparison"] == "val: new.md minus old.md, per item"
    one = paired_comparison(
        {"split": "val", "skill": "new.md", "items": {"a": {"score": 1.0}}},
        {"split": "val", "skill": "old.md", "items": {"a": {"score": 0.0}}},
    )
    assert one["n_pairs"] == 1 and one["interval_95"] is None  # no spread from one item
    none = paired_comparison(
        {"split": "val", "skill": "new.md", "items": {"a": {"score": 1.0}}},
        {"split": "val", "skill": "old.md", "items": {"b": {"score": 0.0}}},
    )
    assert (none["n_pairs"], none["interval_95"], none["missing_pairs"]) == (0, None, 2)
    from skillgrad.cli.main import _paired_line

    base = {"skill": "old.md", "mean_score": 0.0}
    assert "(one item: no interval)" in _paired_line({"baseline": base, "paired": one})
    empty_line = _paired_line({"baseline": base, "paired": none})
    assert empty_line.endswith("no item scored by both skills")


def test_eval_rules_alone_cuts_the_worked_examples(tmp_path: Path) -> None:
    """``--rules-alone`` scores the skill without its Examples section: a target that copies a
    demonstration (Copycat: right only when a ``Reply:`` line is shown) passes every item
    under the whole skill and none under its rules alone; the result is labelled and recorded
    in the skill's run under that label."""
    copycat = f"function:{Path(__file__).parents[1] / 'sweep/fakes_transfer.py'}:Copycat"
    cfg = _config(tmp_path)
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    run = tmp_path / "runs/toy"
    skill = run / "by_hand.md"
    skill.write_text("Reply in UPPERCASE.\n\n## Examples\n\nWord: cat\nReply: CAT\n")
    base = ["eval", str(cfg), "--skill", str(skill), "--target_model", copycat]
    whole = runner.invoke(app, [*base, "--out", str(tmp_path / "whole.json")])
    assert whole.exit_code == 0, whole.output
    assert json.loads((tmp_path / "whole.json").read_text())["mean_score"] == 1.0
    cut = runner.invoke(app, [*base, "--rules-alone", "--out", str(tmp_path / "cut.json")])
    assert cut.exit_code == 0, cut.output
    data = json.loads((tmp_path / "cut.json").read_text())
    assert data["mean_score"] == 0.0 and data["rules_alone"] is True
    assert data["skill"] == f"{skill} (rules alone)" and "(rules alone)" in cut.output
    rows = [json.loads(x) for x in (run / "transfer.jsonl").read_text().splitlines()]
    assert [(r["skill"], r["mean_score"]) for r in rows] == [
        (str(skill), 1.0),
        (f"{skill} (rules alone)", 0.0),
    ]
    plain = tmp_path / "plain.md"
    plain.write_text("Reply in UPPERCASE.\n")
    same = runner.invoke(app, [*base[:3], str(plain), *base[4:], "--rules-alone"])
    assert same.exit_code == 0 and "holds no Examples section" in same.output


def test_trace_shows_what_the_target_did_under_each_skill(tmp_path: Path) -> None:
    """``trace`` reads an item's stored rollout under each skill version (the initial and the
    best skill; a step's starting skill and candidate; a check target's) with its score,
    feedback and transcript; it re-runs and writes nothing; a wrong item, step or target is a
    located error with exit 2."""
    checker = f'{{provider: function, model: "{FAKES}:FakeCheckTarget"}}'
    cfg = tmp_path / "toy.yaml"
    cfg.write_text(
        f"""
train: {{num_epochs: 2, batch_size: 4, check_targets: [{checker}]}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:FakeTarget"}}
env: {{task: toy, output_root: "{tmp_path / "runs"}"}}
"""
    )
    assert runner.invoke(app, ["train", str(cfg), "--quiet"]).exit_code == 0
    run = tmp_path / "runs/toy"

    def files() -> dict[str, bytes]:  # SQLite's own -wal/-shm beside a reader may appear
        return {
            p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and "sqlite-" not in p.name
        }

    before = files()
    item = json.loads((run / "splits.json").read_text())["val"][0]
    shown = runner.invoke(app, ["trace", str(run), item])
    assert shown.exit_code == 0, shown.output
    initial, best = shown.output.split("\n\n")[:2]
    assert initial.startswith(f"val item {item} under the initial skill")
    assert "score 0.000 (failed)" in initial and "[user] Word: " in initial
    assert "under the best skill (v" in best and "score 1.000 (passed)" in best
    assert "[system] " in best and "UPPERCASE" in best
    history = json.loads((run / "history.json").read_text())
    step = next(r["step"] for r in history if r["accepted"] and r["kind"] == "step")
    at_step = runner.invoke(app, ["trace", str(run), item, "--step", str(step), "--json"])
    rows = [json.loads(x) for x in at_step.output.splitlines()]
    assert rows[1]["label"] == f"val item {item} under step {step}'s candidate"
    assert rows[0]["trajectory"]["score"]["value"] == 0.0
    assert rows[1]["trajectory"]["score"]["value"] == 1.0
    test_item = json.loads((run / "splits.json").read_text())["test"][0]
    name = json.loads((run / "summary.json").read_text())["check_targets"]["targets"][0]["target"]
    on_check = runner.invoke(app, ["trace", str(run), test_item, "--target", name, "--json"])
    checked = [json.loads(x)["trajectory"] for x in on_check.output.splitlines()]
    assert [t["output"] for t in checked] == [t["output"].upper() for t in checked]
    assert files() == before and "calls.sqlite" in before
    for args, says in (
        ([item, "--step", "99"], "step 99 wrote no candidate"),
        (["nope"], "'nope' is not an item of"),
        ([item, "--target", "function:other"], f"not a check target of {run} ({name});"),
    ):
        wrong = runner.invoke(app, ["trace", str(run), *args])
        assert wrong.exit_code == 2 and says in wrong.output, wrong.output
    # a damaged stored row (here nested far past any parser's depth) is a located error
    db = sqlite3.connect(run / "calls.sqlite")
    db.execute("UPDATE results SET trajectory=? WHERE item_id=?", ("[" * 100_000, item))
    db.commit()
    db.close()
    damaged = runner.invoke(app, ["trace", str(run), item])
    assert damaged.exit_code == 2 and f"the stored result of {item!r}" in damaged.output
