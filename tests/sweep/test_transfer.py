"""``skillgrad transfer`` end to end with fake models: a 2-seed sweep with --vary-split on the toy
task (real processes), then its skills scored on fake targets that answer unlike the sweep's own
(fakes_transfer.py). Every cell of the matrix is known from the words of each run's own test
split; rows land in each run's transfer.jsonl; a re-run pays nothing; Ctrl-C and SIGKILL mid-way
resume; bad input exits 2 and writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes_transfer import picky_passes
from sweep_helpers import FAKES as SWEEP_FAKES
from sweep_helpers import run_sweep, sweep_cmd, write_config
from typer.testing import CliRunner

from interruptible import SKILLGRAD
from skillgrad.cli.main import app
from skillgrad.runs.io import read_jsonl
from skillgrad.testing import ToyTask

FAKES = Path(__file__).with_name("fakes_transfer.py")
PICKY, STEADY = f"function:{FAKES}:Picky", f"function:{FAKES}:Steady"
OWN = f"function:{SWEEP_FAKES}:Target"
RUNS = {"seed0": 0, "seed1": 1}  # run -> its env.options.seed under --vary-split
runner = CliRunner()


def split_words(seed: int) -> list[str]:
    """The test split of the run whose data seed is ``seed`` (write_config's sizes)."""
    return [i.input for i in ToyTask(n_train=8, n_val=6, n_test=4, seed=seed).load_split("test")]


def transfer(sweep: Path, *args: str, log: Path, latency: float = 0.0) -> subprocess.Popen[str]:
    env = {**os.environ, "TRANSFER_CALL_LOG": str(log), "TRANSFER_LATENCY": str(latency)}
    cmd = [*SKILLGRAD, "transfer", str(sweep), *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def calls(log: Path) -> Counter[str]:
    return Counter(log.read_text().splitlines()) if log.exists() else Counter()


def summary(sweep: Path) -> dict[str, object]:
    return json.loads((sweep / "transfer_summary.json").read_text())


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sweep (and an untouched copy, ``pristine``), then one transfer onto Picky and
    Steady with its output in ``first.txt``."""
    folder = tmp_path_factory.mktemp("transfer")
    config = write_config(folder, latency=0.0, epochs=1)
    args = ["--seeds", "2", "--vary-split", "--workers", "2"]
    done = run_sweep(sweep_cmd(config, folder / "sweep", *args))
    assert done.returncode == 0, done.stderr
    shutil.copytree(folder / "sweep", folder / "pristine")
    code, out, err = finish(
        transfer(
            folder / "sweep",
            "--target_model",
            PICKY,
            "--target_model",
            STEADY,
            log=folder / "first.log",
        )
    )
    assert code == 0, err
    (folder / "first.txt").write_text(out + err)
    return folder


def copy_of(made: Path, tmp_path: Path, name: str = "pristine") -> Path:
    return Path(shutil.copytree(made / name, tmp_path / "sweep"))


def test_each_run_is_scored_on_its_own_split_and_the_matrix_is_known(made: Path) -> None:
    words = {name: split_words(seed) for name, seed in RUNS.items()}
    assert words["seed0"] != words["seed1"]  # --vary-split: a shared split would show below
    for name, seed in RUNS.items():
        config = json.loads((made / "sweep" / name / "config.json").read_text())
        assert config["env"]["options"]["seed"] == seed
    # every word of each run's own test split, once per skill, and nothing else
    picky = Counter(f"picky {w}" for ws in words.values() for w in ws * 2)
    assert calls(made / "first.log") == picky + Counter(
        {k.replace("picky", "steady"): v for k, v in picky.items()}
    )
    # Picky by construction: initial = share of even-length words, best = share holding an "e"
    expect = {
        name: (
            sum(picky_passes(w, "") for w in ws) / 4,
            sum(picky_passes(w, "UPPERCASE") for w in ws) / 4,
        )
        for name, ws in words.items()
    }
    assert expect == {"seed0": (0.75, 0.75), "seed1": (0.5, 0.75)}
    data = summary(made / "sweep")
    assert data["targets"] == [OWN, PICKY, STEADY] and data["complete"] is True
    (config,) = data["configs"]
    cell = config["targets"][PICKY]
    assert cell["main"] is False and cell["seeds"] == [0, 1]
    assert cell["initial"]["values"] == [0.75, 0.5] and cell["best"]["values"] == [0.75, 0.75]
    assert cell["gain"]["values"] == [0.0, 0.25] and cell["gain"]["mean"] == 0.125
    assert (cell["gain"]["ci_low"], cell["gain"]["ci_high"]) == (-1.0, 1.0)  # cut to its range
    # per item (best - initial): falcon -1, river +1 (seed0); stone +1 (seed1); 5 ties
    pt = cell["paired_test"]
    assert (pt["n_pairs"], pt["wins"], pt["losses"], pt["ties"]) == (8, 2, 1, 5)
    assert pt["p_value"] == 1.0 and pt["method"] == "exact" and pt["missing_pairs"] == 0
    steady = config["targets"][STEADY]
    assert steady["initial"]["values"] == steady["best"]["values"] == [1.0, 1.0]
    assert steady["paired_test"]["ties"] == 8  # not Picky's results: no result is shared
    # the sweep's own target, from the runs (sweep_summary.json's numbers), no call
    main = config["targets"][OWN]
    own = json.loads((made / "sweep" / "sweep_summary.json").read_text())["configs"][0]
    assert main["main"] is True
    assert main["initial"]["values"] == own["test_initial"]["values"] == [0.0, 0.0]
    assert main["gain"]["values"] == own["test_gain"]["values"] == [1.0, 1.0]
    assert main["paired_test"]["wins"] == own["paired_test"]["wins"] == 8


def test_results_are_rows_of_each_runs_transfer_jsonl(made: Path) -> None:
    for name, seed in RUNS.items():
        run = made / "sweep" / name
        rows = read_jsonl(run / "transfer.jsonl")
        got = {
            (r["setup"], Path(r["skill"]).name): (r["split"], r["n"], r["mean_score"]) for r in rows
        }
        initial, best = [
            sum(picky_passes(w, skill) for w in split_words(seed)) / 4
            for skill in ("", "UPPERCASE")
        ]
        assert len(rows) == 4 and got == {
            (f"toy / {PICKY}", "skill_v0000.md"): ("test", 4, initial),
            (f"toy / {PICKY}", "best_skill.md"): ("test", 4, best),
            (f"toy / {STEADY}", "skill_v0000.md"): ("test", 4, 1.0),
            (f"toy / {STEADY}", "best_skill.md"): ("test", 4, 1.0),
        }
        assert {Path(r["skill"]).parent for r in rows} <= {run, run / "skills"}
        assert len(list(run.glob("_eval/*/calls.sqlite"))) == 2  # one cache per target


def test_rerun_pays_nothing_and_lists_each_result_once(made: Path, tmp_path: Path) -> None:
    sweep = made / "sweep"  # itself: its rows name its own paths
    first = summary(sweep)
    before = {name: (sweep / name / "transfer.jsonl").read_bytes() for name in RUNS}
    log = tmp_path / "again.log"
    code, out, err = finish(
        transfer(sweep, "--target_model", PICKY, "--target_model", STEADY, log=log)
    )
    assert code == 0, err
    assert calls(log) == Counter()  # every answer came from the runs' caches
    assert {name: (sweep / name / "transfer.jsonl").read_bytes() for name in RUNS} == before
    assert summary(sweep)["configs"] == first["configs"]
    assert "## (base config)" in out and f"| {PICKY} | 0.625 [0, 1] | 0.75 [0.75, 0.75] |" in out


def test_the_sweeps_own_target_is_taken_from_the_runs(made: Path, tmp_path: Path) -> None:
    sweep = copy_of(made, tmp_path, "sweep")
    caches = sorted(sweep.glob("*/_eval/*"))
    log = tmp_path / "own.log"
    code, _, err = finish(transfer(sweep, "--target_model", OWN, "--target_model", PICKY, log=log))
    assert code == 0, err
    assert f"{OWN} is the sweep's own target: its values come from the runs (no calls)" in err
    assert calls(log) == Counter() and sorted(sweep.glob("*/_eval/*")) == caches
    data = summary(sweep)
    assert data["targets"] == [OWN, PICKY] and data["given_targets"] == [OWN, PICKY]
    first = summary(made / "sweep")["configs"][0]["targets"]
    assert data["configs"][0]["targets"] == {OWN: first[OWN], PICKY: first[PICKY]}


def _unplaced(report: str) -> list[str]:
    """A report's lines but those naming where the sweep lies (the copy's folder differs)."""
    return [line for line in report.splitlines() if "pytest-" not in line]


def test_a_damaged_sweep_file_names_a_way_on_that_works(made: Path, tmp_path: Path) -> None:
    """The summary and the matrix are derived: deleting them as the error says and re-running
    what it names restores the report. The plan is not: the error names another --out, and no
    command offers a --fresh that `skillgrad sweep` does not have."""
    sweep = copy_of(made, tmp_path, "sweep")
    healthy = runner.invoke(app, ["report", str(sweep)]).output
    for name, rerun in (
        ("sweep_summary.json", ["report", str(sweep)]),
        ("transfer_summary.json", ["transfer", str(sweep), *T, "--target_model", STEADY]),
    ):
        (sweep / name).write_text("{trunc")
        broken = runner.invoke(app, ["report", str(sweep)])
        assert broken.exit_code == 2 and f"{name}: the " in broken.output
        assert "delete it" in broken.output and "--fresh" not in broken.output, broken.output
        (sweep / name).unlink()
        assert runner.invoke(app, rerun).exit_code == 0
    restored = runner.invoke(app, ["report", str(sweep)])
    assert restored.exit_code == 0 and _unplaced(restored.output) == _unplaced(healthy)
    assert "# Transfer: " in restored.output
    (sweep / "sweep.json").write_text("[")
    for args in (["report", str(sweep)], ["transfer", str(sweep), *T]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "another --out folder" in result.output, result.output
        assert "--fresh" not in result.output and "Traceback" not in result.output


def test_report_shows_the_matrix(made: Path, tmp_path: Path) -> None:
    sweep = copy_of(made, tmp_path, "sweep")
    text = runner.invoke(app, ["report", str(sweep)])
    assert text.exit_code == 0, text.output
    assert "# Transfer: " in text.output and f"{OWN} (main target)" in text.output
    assert f"| {STEADY} | 1 [1, 1] | 1 [1, 1] | 0 [0, 0] | 0, 0 | +0 / -0 / =8, p = 1 |" in (
        text.output
    )
    html = runner.invoke(app, ["report", str(sweep), "--html"])
    assert html.exit_code == 0, html.output
    page = (sweep / "sweep_report.html").read_text()
    assert "Transfer (test split)" in page and f"{OWN} (main target)" in page and STEADY in page


def wait_for_calls(log: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while sum(calls(log).values()) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the transfer made no progress"
        time.sleep(0.01)


def test_ctrl_c_and_kill_mid_way_resume_without_paying_twice(made: Path, tmp_path: Path) -> None:
    sweep = copy_of(made, tmp_path)
    log = tmp_path / "calls.log"
    # slow calls, so the run is still going when the signal lands even on a loaded machine
    first = transfer(sweep, "--target_model", PICKY, log=log, latency=1.0)
    wait_for_calls(log, 3, first)
    first.send_signal(signal.SIGINT)
    code, _, err = finish(first)
    assert code == 130 and "re-run the same command to resume" in err
    second = transfer(sweep, "--target_model", PICKY, log=log, latency=1.0)
    wait_for_calls(log, 10, second)
    second.kill()
    second.communicate(timeout=60)
    assert not (sweep / "transfer_summary.json").exists()
    code, _, err = finish(transfer(sweep, "--target_model", PICKY, log=log))
    assert code == 0, err
    reference = summary(made / "sweep")["configs"][0]["targets"][PICKY]
    assert summary(sweep)["configs"][0]["targets"][PICKY] == reference
    paid = calls(log)
    once = Counter(f"picky {w}" for seed in RUNS.values() for w in split_words(seed) * 2)
    assert not once - paid  # everything was answered
    assert sum((paid - once).values()) <= 2 * 2  # twice: at most what was in flight (2 workers)
    for name in RUNS:  # each result listed once, however often it was asked for
        assert len(read_jsonl(sweep / name / "transfer.jsonl")) == 2


def test_unfinished_runs_are_left_out_and_named(made: Path, tmp_path: Path) -> None:
    sweep = copy_of(made, tmp_path, "sweep")
    (sweep / "seed1" / "summary.json").unlink()
    code, _, err = finish(transfer(sweep, "--target_model", PICKY, log=tmp_path / "log"))
    assert code == 0, err
    assert "not finished, left out: seed1 (unfinished)" in err
    data = summary(sweep)
    assert (data["runs_finished"], data["runs_total"], data["complete"]) == (1, 2, False)
    assert data["not_finished"] == {"seed1": "unfinished"}
    assert data["configs"][0]["targets"][PICKY]["seeds"] == [0]


def test_a_run_stopped_by_patience_is_scored_not_named_left_out(made: Path, tmp_path: Path) -> None:
    sweep = copy_of(made, tmp_path, "sweep")
    _edit_json(sweep / "seed1" / "summary.json", lambda s: s.update(status="early_stopped"))
    code, _, err = finish(transfer(sweep, "--target_model", PICKY, log=tmp_path / "log"))
    assert code == 0, err
    assert "left out" not in err and "2 finished runs" in err
    assert summary(sweep)["configs"][0]["targets"][PICKY]["seeds"] == [0, 1]


def _edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _set_option(key: str, value: object) -> Callable[[Path], None]:
    """Change one of seed0's env.options in its config.json."""
    return lambda s: _edit_json(
        s / "seed0/config.json", lambda d: d["env"]["options"].update({key: value})
    )


def _escape(sweep: Path) -> None:
    _edit_json(sweep / "sweep.json", lambda d: d["jobs"][0].update({"name": "../seed0"}))


def _linked_run(sweep: Path) -> None:
    outside = sweep.parent / "elsewhere"
    (sweep / "seed1").rename(outside)
    (sweep / "seed1").symlink_to(outside)


T = ["--target_model", PICKY]
BAD: dict[str, tuple[Callable[[Path], None] | None, list[str], str]] = {
    "no target": (None, [], "give at least one --target_model"),
    "split": (None, ["--target_model", PICKY, "--split", "train"], "--split must be val or test"),
    "unknown provider": (None, ["--target_model", "nosuch:m"], "unknown model provider 'nosuch'"),
    "unknown local model": (
        None,
        ["--target_model", "llamacpp:no-such-model"],
        "not in the local model catalog",
    ),
    "missing function": (None, ["--target_model", "function:nowhere.py:X"], "does not exist"),
    "config.json damaged": (
        lambda s: (s / "seed0/config.json").write_text("{trunc"),
        T,
        "config.json: not valid JSON",
    ),
    "config.json missing": (
        lambda s: (s / "seed1/config.json").unlink(),
        T,
        "not a skillgrad run config",
    ),
    "best skill edited": (
        lambda s: (s / "seed1/best_skill.md").write_text("# mine\n"),
        T,
        "best_skill.md: not the best skill the run committed",
    ),
    "initial skill removed": (
        lambda s: (s / "seed0/skills/skill_v0000.md").unlink(),
        T,
        "skill_v0000.md: missing in a finished run",
    ),
    "state damaged": (
        lambda s: (s / "seed1/runtime_state.json").write_text("{"),
        T,
        "runtime_state.json: not valid JSON",
    ),
    "ledger damaged": (
        lambda s: (s / "seed0/calls.sqlite").write_bytes(b"not sqlite" * 100),
        T,
        "calls.sqlite: the call ledger is not a readable SQLite database",
    ),
    "transfer.jsonl damaged": (
        lambda s: (s / "seed0/transfer.jsonl").write_text("{bad\n{}\n"),
        T,
        "transfer.jsonl line 1: not a JSON record",
    ),
    "a job out of the sweep": (_escape, T, "sweep.json: its jobs are damaged"),
    "sweep.json damaged": (
        lambda s: (s / "sweep.json").write_text('{"sweep_id": '),
        T,
        "sweep.json: the sweep's plan is not valid JSON",
    ),
    "data changed": (_set_option("seed", 7), T, "the task's data changed since this run started"),
    "a redacted secret": (_set_option("api_key", "***"), T, "env.options.api_key held a secret"),
    "a run that is a symlink": (_linked_run, T, "seed1 is a symlink"),
    "a symlink": (
        lambda s: (s / "seed0/notes").symlink_to("/etc/hostname"),
        T,
        "seed0/notes is a symlink",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exits_2_and_writes_nothing(case: str, made: Path, tmp_path: Path) -> None:
    damage, args, message = BAD[case]
    sweep = copy_of(made, tmp_path)
    if damage is not None:
        damage(sweep)
    before = files(sweep)
    result = runner.invoke(app, ["transfer", str(sweep), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert files(sweep) == before


def test_not_a_sweep_exits_2(made: Path, tmp_path: Path) -> None:
    for folder in (tmp_path, made / "pristine" / "seed0"):
        result = runner.invoke(app, ["transfer", str(folder), "--target_model", PICKY])
        assert result.exit_code == 2 and "is not a sweep directory" in result.output
    assert list(tmp_path.iterdir()) == []


def test_an_uninstalled_model_names_the_pull_command(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fixtures_catalog import write_user_catalog
    from skillgrad.models.catalog import CatalogEntry, HuggingFaceFile

    entry = CatalogEntry(
        name="tiny-test",
        file="tiny-test.gguf",
        bytes=10,
        sha256="0" * 64,
        license="MIT",
        huggingface=HuggingFaceFile(repo="x/tiny-GGUF"),
    )
    write_user_catalog(tmp_path / "config", entry)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sweep = copy_of(made, tmp_path)
    before = files(sweep)
    result = runner.invoke(app, ["transfer", str(sweep), "--target_model", "llamacpp:tiny-test"])
    assert result.exit_code == 2, result.output
    assert "local model tiny-test is not installed. Run: skillgrad models pull tiny-test" in (
        result.output
    )
    assert files(sweep) == before
