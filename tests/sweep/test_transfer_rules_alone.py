"""``skillgrad transfer --rules-alone``: each best skill is also scored with its worked examples
cut, on every target, the sweep's own included. A 2-seed sweep of the toy task with worked
examples on (real processes; each best skill holds the rule "UPPERCASE" and one example), then
Copycat (fakes_transfer.py: right only when a demonstration's reply is shown) and the sweep's own
target (right exactly when the skill says UPPERCASE): the rules alone lift the own target as much
as the whole skill, and Copycat not at all."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from sweep_helpers import FAKES as SWEEP_FAKES
from sweep_helpers import run_sweep, sweep_cmd, write_config
from test_transfer import FAKES, calls, finish, summary, transfer

from skillgrad.runs.io import read_jsonl

COPYCAT = f"function:{FAKES}:Copycat"
OWN = f"function:{SWEEP_FAKES}:Target"
RUNS = ("seed0", "seed1")


def own_target(log: Path) -> str:
    """The sweep's own target as a mapping whose calls are logged (``role hash`` per line)."""
    return json.dumps({"provider": "function", "model": f"{SWEEP_FAKES}:Target",
                       "options": {"log": str(log)}})  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rules_alone")
    config = write_config(folder, latency=0.0, epochs=1)
    args = ["--seeds", "2", "--vary-split", "--workers", "2", "--set", "train.examples=on"]
    done = run_sweep(sweep_cmd(config, folder / "sweep", *args))
    assert done.returncode == 0, done.stderr
    return folder


def run(folder: Path, *targets: str, log: str) -> tuple[int, str, str]:
    args = [a for t in targets for a in ("--target_model", t)]
    return finish(transfer(folder / "sweep", *args, "--rules-alone", log=folder / log))


def test_rules_alone_are_scored_on_every_target_and_kept_beside_the_run(made: Path) -> None:
    folder = made
    for name in RUNS:  # the premise: each best skill holds a rule and an example
        best = (folder / "sweep" / name / "best_skill.md").read_text()
        assert "UPPERCASE" in best and "# Examples" in best and "Reply: " in best
    own_log = folder / "own.log"
    code, out, err = run(folder, own_target(own_log), COPYCAT, log="first.log")
    assert code == 0, err
    assert "the rules alone are scored on it" in err and "8 evaluations" in err
    for name in RUNS:
        rules = (folder / "sweep" / name / "_eval" / "best_skill.rules_alone.md").read_text()
        best = (folder / "sweep" / name / "best_skill.md").read_text()
        assert rules == best[: best.index("# Examples")].rstrip() + "\n"
        rows = {(r["setup"].split(" / ")[1], Path(r["skill"]).name): r["mean_score"]
                for r in read_jsonl(folder / "sweep" / name / "transfer.jsonl")}  # fmt: skip
        assert rows == {
            (COPYCAT, "skill_v0000.md"): 0.0,
            (COPYCAT, "best_skill.md"): 1.0,
            (COPYCAT, "best_skill.rules_alone.md"): 0.0,
            (OWN, "best_skill.rules_alone.md"): 1.0,
        }
    # the own target is called for the rules alone only: 4 test items per run
    assert Counter(x.split()[0] for x in own_log.read_text().splitlines()) == {"target": 8}
    # Copycat: the initial, the best and the rules alone, 4 items each per run
    assert sum(calls(folder / "first.log").values()) == 2 * 3 * 4
    (config,) = summary(folder / "sweep")["configs"]
    own, copy = config["targets"][OWN], config["targets"][COPYCAT]
    assert own["best"]["values"] == own["rules_alone"]["best"]["values"] == [1.0, 1.0]
    assert own["rules_alone"]["gain"]["values"] == [1.0, 1.0]
    assert own["rules_alone"]["paired_test"]["wins"] == 8
    assert copy["initial"]["values"] == [0.0, 0.0] and copy["best"]["values"] == [1.0, 1.0]
    assert copy["rules_alone"]["best"]["values"] == [0.0, 0.0]
    assert copy["rules_alone"]["paired_test"]["ties"] == 8
    assert f"| {COPYCAT}: rules alone | 0 [0, 0] | 0 [0, 0] | 0 [0, 0] | 0, 0 |" in out
    row = f"| {OWN}: rules alone | 0 [0, 0] | 1 [1, 1] | 1 [1, 1] | 1, 1 |"
    assert row + " +8 / -0 / =0, p = 0.0078 |" in out
    # a re-run pays nothing and finds the same matrix
    first = summary(folder / "sweep")["configs"]
    code, _, err = run(folder, own_target(own_log), COPYCAT, log="again.log")
    assert code == 0, err
    assert len(own_log.read_text().splitlines()) == 8 and calls(folder / "again.log") == Counter()
    assert summary(folder / "sweep")["configs"] == first


def test_the_own_targets_rules_alone_are_scored_when_only_other_targets_are_given(
    made: Path, tmp_path: Path
) -> None:
    """``--rules-alone`` with only another target: the sweep's own target still gets its rules
    alone scored (the runs never scored them), from the run's own model settings."""
    folder = tmp_path / "copy"
    shutil.copytree(made / "sweep", folder / "sweep")
    for name in RUNS:  # start from no transfer answer at all
        (folder / "sweep" / name / "transfer.jsonl").unlink(missing_ok=True)
    code, out, err = run(folder, COPYCAT, log="only_copycat.log")
    assert code == 0, err
    assert "Traceback" not in err and "8 evaluations" in err
    assert f"| {OWN}: rules alone | 0 [0, 0] | 1 [1, 1] | 1 [1, 1] | 1, 1 |" in out
    (config,) = summary(folder / "sweep")["configs"]
    own = config["targets"][OWN]
    assert own["main"] and own["rules_alone"]["best"]["values"] == [1.0, 1.0]
    assert own["rules_alone"]["paired_test"]["wins"] == 8
    assert config["targets"][COPYCAT]["rules_alone"]["best"]["values"] == [0.0, 0.0]
    for name in RUNS:
        rows = read_jsonl(folder / "sweep" / name / "transfer.jsonl")
        assert {(r["setup"].split(" / ")[1], Path(r["skill"]).name) for r in rows} >= {
            (OWN, "best_skill.rules_alone.md")
        }
