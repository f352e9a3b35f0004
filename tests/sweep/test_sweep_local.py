"""``skillgrad sweep`` on the local process pool, end to end with fake models in real processes:
summary numbers, resume without paying twice after a worker is SIGKILLed, report, refusal."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sweep_helpers import (
    GRID,
    KILLED_RUN,
    assert_nothing_paid_twice,
    calls,
    comparable_summary,
    kill_one_run_then_resume,
    run_sweep,
    sweep_cmd,
    uninterrupted,
    write_config,
)

Reference = tuple[list[dict[str, object]], Counter[str]]
LOCAL = ("--workers", "2")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Reference]:
    folder = tmp_path_factory.mktemp("ref")
    return folder, uninterrupted(folder, *LOCAL)


def test_summary_has_every_metric_per_config(reference: tuple[Path, Reference]) -> None:
    folder, _ = reference
    data = json.loads((folder / "sweep" / "sweep_summary.json").read_text())
    assert data["complete"] and data["runs_finished"] == data["runs_total"] == 4
    constant, cosine = data["configs"]
    assert constant["params"] == {"train.lr_scheduler": "constant"}
    assert cosine["params"] == {"train.lr_scheduler": "cosine"}
    for config in data["configs"]:
        for metric in ("val_initial", "val_best", "test_initial", "test_best", "test_gain",
                       "skill_tokens", "calls", "cost_usd"):  # fmt: skip
            stat = config[metric]
            assert len(stat["values"]) == 2
            assert stat["ci_low"] <= stat["mean"] <= stat["ci_high"]
    # the fakes: the helpful rule makes every test item pass (4 items x 2 seeds, all +1)
    assert cosine["test_gain"]["values"] == [1.0, 1.0]
    pt = cosine["paired_test"]
    assert (pt["n_pairs"], pt["wins"], pt["losses"], pt["method"]) == (8, 8, 0, "exact")
    assert pt["p_value"] == pytest.approx(2 / 2**8)


def test_rerun_skips_finished_runs_and_pays_nothing(reference: tuple[Path, Reference]) -> None:
    folder, (summary, paid) = reference
    cmd = sweep_cmd(folder / "config.yaml", folder / "sweep", "--seeds", "2", *GRID, *LOCAL)
    again = run_sweep(cmd)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count(" skipped") == 4
    assert calls(folder) == paid
    assert comparable_summary(folder / "sweep") == summary


def test_more_seeds_run_only_the_new_runs(
    tmp_path: Path, reference: tuple[Path, Reference]
) -> None:
    _, (summary, paid) = reference
    config = write_config(tmp_path)
    first = run_sweep(sweep_cmd(config, tmp_path / "sweep", "--seeds", "1", *GRID, *LOCAL))
    assert first.returncode == 0, first.stderr
    before = calls(tmp_path)
    more = run_sweep(sweep_cmd(config, tmp_path / "sweep", "--seeds", "2", *GRID, *LOCAL))
    assert more.returncode == 0, more.stderr
    assert more.stderr.count(" skipped") == 2 and more.stderr.count(" finished") == 2
    assert calls(tmp_path) == paid  # the seed-0 runs were not run again
    assert calls(tmp_path) != before
    assert comparable_summary(tmp_path / "sweep") == summary  # as if run with --seeds 2 at once


@pytest.mark.slow
def test_killed_worker_then_rerun_finishes_without_paying_twice(
    tmp_path: Path, reference: tuple[Path, Reference]
) -> None:
    _, (summary, paid) = reference
    first_err, _ = kill_one_run_then_resume(tmp_path, *LOCAL)
    assert f"{KILLED_RUN} failed in" in first_err
    assert "its worker process was killed by SIGKILL" in first_err
    assert "Re-run the same command to resume" in first_err
    assert comparable_summary(tmp_path / "sweep") == summary
    assert_nothing_paid_twice(calls(tmp_path), paid)


def test_a_grid_over_check_targets_and_the_gate_rule(tmp_path: Path) -> None:
    """Both options work from --grid: a list of models (commas inside it) and a rule; the sweep
    summary and its report give each check target's test scores over seeds."""
    from skillgrad.report.sweep import render_sweep_text

    config = write_config(tmp_path, latency=0.0, epochs=1)
    e2e = Path(__file__).parents[1] / "fakes_e2e.py"
    model = f'{{provider: function, model: "{e2e}:FakeCheckTarget", options: {{breaks_on: X}}}}'
    grid = ["--grid", f"train.check_targets=[],[{model}]"]
    grid += ["--grid", "train.check_targets_rule=strict,paired"]
    done = run_sweep(sweep_cmd(config, tmp_path / "sweep", *grid, *LOCAL))
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "sweep" / "sweep_summary.json").read_text())
    assert data["runs_finished"] == 4
    name = "function:fake-check-X-0"
    for c in data["configs"]:
        if c["params"]["train.check_targets"]:
            stats = c["check_targets"][name]
            # the check target answers right with or without the learned rule (no "X" in it)
            assert stats["test_initial"]["values"] == stats["test_best"]["values"] == [1.0]
        else:
            assert c["check_targets"] == {}
        assert c["test_gain"]["values"] == [1.0]
    assert f"| check {name}: test_change | 0 (1 seed) | 0 |" in render_sweep_text(data)


def test_an_ablation_pairs_each_arm_with_the_base_config(tmp_path: Path) -> None:
    """``--ablate`` reads as "this arm minus the base config" on the same seeds and test items:
    here the arm that starts from a lowercase rule the fakes never unlearn scores 1 below the
    base config (it starts empty), on every seed and every test item; a seed only one arm
    finished is not paired."""
    from skillgrad.report.sweep import render_sweep_text
    from skillgrad.sweep.summary import build_sweep_summary

    config = write_config(tmp_path, latency=0.0, epochs=1)
    lower = tmp_path / "lower.md"
    lower.write_text("- Reply in lowercase only.\n")
    ablate = ["--ablate", f"train.init_skill={lower}"]
    done = run_sweep(sweep_cmd(config, tmp_path / "sweep", "--seeds", "2", *ablate, *LOCAL))
    assert done.returncode == 0, done.stderr
    plan = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [j["seed"] for j in plan["jobs"]] == [0, 0, 1, 1]  # seed by seed
    data = json.loads((tmp_path / "sweep" / "sweep_summary.json").read_text())
    (arm,) = data["arms"]
    assert arm["reference"] == {}
    assert arm["params"] == {"train.init_skill": str(lower)}
    assert arm["seeds"] == [0, 1]
    assert arm["test_best_diff"]["values"] == [-1.0, -1.0]
    test = arm["paired_test"]
    assert (test["n_pairs"], test["wins"], test["losses"], test["missing_pairs"]) == (8, 0, 8, 0)
    text = render_sweep_text(data)
    assert "## Against (base config) (same seeds, same test items)" in text
    assert "| 0, 1 | -1 [-1, -1] | -1, -1 | mean diff -1 over 8 pairs (+0 / -8 / =0)" in text

    # the arm's seed 1 unfinished (its summary gone): only seed 0 is paired
    (tmp_path / "sweep" / plan["jobs"][3]["name"] / "summary.json").unlink()
    (arm,) = build_sweep_summary(tmp_path / "sweep")["arms"]
    assert arm["seeds"] == [0] and arm["paired_test"]["n_pairs"] == 4


def test_a_different_sweep_in_the_same_directory_is_refused(
    reference: tuple[Path, Reference],
) -> None:
    folder, _ = reference
    # fewer seeds (more would extend it: test_more_seeds_run_only_the_new_runs)
    cmd = sweep_cmd(folder / "config.yaml", folder / "sweep", "--seeds", "1", *GRID)
    refused = run_sweep(cmd)
    assert refused.returncode == 2
    assert "holds a different sweep" in refused.stderr and "seeds: [0, 1] -> [0]" in (
        refused.stderr
    )
    assert "Traceback" not in refused.stderr


def test_report_of_a_sweep_directory(reference: tuple[Path, Reference]) -> None:
    folder, _ = reference
    sweep = folder / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "skillgrad", "report", str(sweep), "--html"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "## train.lr_scheduler=cosine  (2 seeds finished)" in done.stdout
    assert "| test_gain | 1 [1, 1] | 1, 1 |" in done.stdout
    # the two schedules learn the same rule: cosine minus constant is 0 on both seeds
    assert "## Against train.lr_scheduler=constant (same seeds" in done.stdout
    assert "| train.lr_scheduler=cosine | 0, 1 | 0 [0, 0] | 0, 0 |" in done.stdout
    page = (sweep / "sweep_report.html").read_text()
    assert 'id="sweep_test_scores"' in page and "data:image/png;base64," in page
    assert '<table id="arms">' in page and "train.lr_scheduler=cosine</td><td>0, 1</td>" in page
    assert (sweep / "figures" / "sweep_test_gain.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "damage",
    [{"seed": "1"}, {"name": "../elsewhere"}, {"params": ["a"]}],
    ids=["seed-not-int", "name-out-of-the-sweep", "params-not-a-mapping"],
)
def test_a_damaged_job_in_sweep_json_is_a_located_error(
    reference: tuple[Path, Reference], tmp_path: Path, damage: dict[str, object]
) -> None:
    """Every reader joins a job's name to the sweep and pairs arms by its seed: a damaged job
    is refused where sweep.json is read, with the file named, not a traceback."""
    import shutil

    folder, _ = reference
    sweep = tmp_path / "sweep"
    shutil.copytree(folder / "sweep", sweep)
    plan = json.loads((sweep / "sweep.json").read_text())
    plan["jobs"][1].update(damage)
    (sweep / "sweep.json").write_text(json.dumps(plan))
    (sweep / "sweep_summary.json").unlink()  # the report then reads the runs through the plan
    done = subprocess.run(
        [sys.executable, "-m", "skillgrad", "report", str(sweep)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "sweep.json: its jobs are damaged" in done.stderr and "Traceback" not in done.stderr


def test_missing_ray_is_a_clear_message(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
        "from skillgrad.cli.main import app\n"
        f"app(['sweep', {str(write_config(tmp_path))!r}, '--executor', 'ray', "
        f"'--out', {str(tmp_path / 'sw')!r}])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'skillgrad[ray]'" in done.stderr and "Traceback" not in done.stderr


def test_compare_expands_a_sweep_into_its_runs(reference: tuple[Path, Reference]) -> None:
    from skillgrad.report.compare import compare_runs

    folder, _ = reference
    result = compare_runs([folder / "sweep"])
    assert len(result.names) == 4 and result.names[0] == KILLED_RUN
    assert set(result.config_diff) == {"train.lr_scheduler", "train.seed"}


def test_dashboard_lists_sweeps_with_intervals(reference: tuple[Path, Reference]) -> None:
    from starlette.testclient import TestClient

    from skillgrad.dashboard import create_app

    folder, _ = reference
    for root in (folder / "sweep", folder):  # the sweep itself, or a folder holding sweeps
        page = TestClient(create_app(root), base_url="http://127.0.0.1").get("/").text
        assert "Sweep sweep" in page and "4 of 4 runs finished" in page
        assert "train.lr_scheduler=cosine" in page and "1 [1, 1]" in page
    runs = TestClient(create_app(folder / "sweep"), base_url="http://127.0.0.1").get("/api/runs")
    assert len(runs.json()) == 4  # the dashboard on a sweep shows each of its runs


def test_a_run_stopped_by_patience_counts_as_finished(tmp_path: Path) -> None:
    """Early stopping is a normal end (the test split is scored): exit 0, in the summary."""
    config = write_config(tmp_path / "w", latency=0.0)
    out = tmp_path / "sweep"
    done = run_sweep(sweep_cmd(config, out, "--seeds", "2", "--set", "train.patience=1"))
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "sweep_summary.json").read_text())
    (c,) = summary["configs"]
    assert set(c["status"].values()) == {"early_stopped"} and summary["complete"]
    assert c["runs_finished"] == 2 and c["test_gain"]["n"] == 2
    assert "not finished" not in done.stdout
