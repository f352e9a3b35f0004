"""Hostile environments through the installed CLI (``python -m skillgrad``), with real environment
processes: a step that raises on the reply's command is the episode's end, scored (never a dead
run, never a skipped episode); an environment that cannot reset stops the run naming the
environment; bad options are located errors (exit 2); episode ids never collide; a worker stuck in
a C call that holds the GIL dies with a ``kill -9``'d run."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interruptible import SKILLGRAD
from skillgrad.testing import TinyEnv

pytestmark = pytest.mark.slow  # subprocesses
FAKES = Path(__file__).parents[1]
HOSTILE = FAKES / "fakes_env_hostile.py"


def config(tmp: Path, env: str, target: str, options: str = "", train: str = "") -> Path:
    path = tmp / "config.yaml"
    path.write_text(f"""
{train}
models:
  optimizer: {{provider: function, model: "{FAKES / "fakes_e2e.py"}:FakeOptimizer"}}
  target: {{provider: function, model: "{target}"}}
env:
  task: environment
  output_root: "{tmp / "runs"}"
  run_name: run
  options: {{env: "{env}", n_train: 4, n_val: 6, n_test: 2, max_steps: 3 {options}}}
hardware: {{rollout_workers: 2, analyst_workers: 2}}
""")
    (tmp / "skill.md").write_text("Act.\n")
    return path


def run(*args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "skillgrad", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def evaluate(
    tmp: Path, cfg: Path, split: str = "val", *more: str
) -> tuple[int, str, dict[str, object]]:
    out = tmp / "result.json"
    done = run("eval", cfg, "--skill", tmp / "skill.md", "--split", split, "--out", out, *more)
    result = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, done.stderr, result


def test_a_candidate_whose_every_reply_is_an_invalid_command_is_rejected_not_the_runs_end(
    tmp_path: Path,
) -> None:
    """StrictEnv raises ValueError on a command it does not list; the candidate with the fake
    optimizer's good rule makes the target type ``xyzzy`` in every episode."""
    # strict: its lossless early rejection plays every val episode when the incumbent scores 0
    # (the point here); paired would stop after 3
    train = (
        "train: {num_epochs: 2, batch_size: 4, patience: 5, learning_rate: 4, "
        "min_learning_rate: 1, lr_decay_on_reject: 0.5, minibatch_size: 2, gate_rule: strict, "
        "examples: off, explore: off}"
    )
    target = f"{HOSTILE}:InvalidCommandTarget"
    cfg = config(tmp_path, f"{HOSTILE}:StrictEnv", target, train=train)
    done = run("train", cfg, "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every one of" not in done.stderr and "Traceback" not in done.stderr
    run_dir = tmp_path / "runs/run"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["val_initial"] == summary["val_best"] == 0.0
    assert "UPPERCASE" not in (run_dir / "best_skill.md").read_text()
    history = {r["step"]: r for r in json.loads((run_dir / "history.json").read_text())}
    taught = [
        int(p.parent.name.split("_")[1])
        for p in run_dir.glob("steps/*/candidate.md")
        if "UPPERCASE" in p.read_text()
    ]
    assert taught  # the candidate was played on every val episode, scored 0 and rejected
    for step in taught:
        record = history[step]
        assert (record["gate_evaluated"], record["gate_missing"]) == (6, 0), record
        assert record["candidate_score"] == 0.0 and not record["accepted"]


def crashing_seeds(n: int) -> tuple[int, list[int]]:
    """A run seed whose ``n`` val episodes hold both kinds for ``CrashHalfTarget``."""
    from skillgrad.tasks.environment import EnvironmentTask

    for seed in range(100):
        items = EnvironmentTask("skillgrad.testing:TinyEnv", n_val=n, seed=seed).load_split("val")
        seeds = [int(i.input["seed"]) for i in items]
        solved = [s for s in seeds if solvable(s)]
        if 0 < len(solved) < n:
            return seed, seeds
    raise AssertionError("no seed mixes both kinds")


def solvable(seed: int) -> bool:
    obs, _ = TinyEnv().reset(seed=seed)
    return "closed box" in obs or "closed crate" in obs


def test_a_candidate_that_crashes_the_environment_on_half_the_episodes_scores_0_on_those(
    tmp_path: Path,
) -> None:
    seed, seeds = crashing_seeds(6)
    target = f"{HOSTILE}:CrashHalfTarget"
    options = f", env_options: {{traps: true}}, seed: {seed}"
    cfg = config(tmp_path, "skillgrad.testing:TinyEnv", target, options)
    code, err, result = evaluate(tmp_path, cfg)
    assert code == 0, err[-3000:]
    items = result["items"]
    assert isinstance(items, dict) and len(items) == 6
    for s in seeds:
        item = items[f"val-{s}"]
        assert "infra_error" not in item, item  # the reply broke the game: no missing data
        if solvable(s):
            assert item["score"] == 1.0
        else:
            assert item["score"] == 0.0
            assert (
                "the environment raised RuntimeError: tiny env crashed on purpose on the action "
                "'crash' at step 1" in item["feedback"]
            ), item["feedback"]
    solved = sum(map(solvable, seeds))
    assert result["mean_score"] == pytest.approx(solved / 6) and result["n"] == 6


def test_when_every_reset_fails_the_run_stops_naming_the_environment_not_the_model(
    tmp_path: Path,
) -> None:
    cfg = config(tmp_path, f"{HOSTILE}:BrokenResetEnv", f"{HOSTILE}:ActionTarget")
    code, err, _ = evaluate(tmp_path, cfg)
    assert code != 0 and "Traceback" not in err
    assert "OSError: the game data folder is missing" in err
    assert "The environment failed, not the target model" in err, err
    assert "endpoint and credentials" not in err


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("n_val=100001", "env.options.n_val is 100,001; at most 100,000"),
        ("n_train=250000", "env.options.n_train is 250,000; at most 100,000"),
        ("step_timeout=.inf", "env.options.step_timeout must be a finite number > 0"),
        ("step_timeout=.nan", "env.options.step_timeout must be a finite number > 0"),
        ("step_timeout=90000", "env.options.step_timeout is 90000; at most 3600"),
        ("step_timeout=-1", "env.options.step_timeout must be a finite number > 0"),
        ("max_reward=.inf", "env.options.max_reward must be a finite number > 0"),
        ("n_test=true", "env.options.n_test must be an integer >= 0"),
    ],
)
def test_bad_split_sizes_and_timeouts_are_located_config_errors(
    tmp_path: Path, option: str, says: str
) -> None:
    cfg = config(tmp_path, "skillgrad.testing:TinyEnv", f"{HOSTILE}:ActionTarget")
    code, err, _ = evaluate(tmp_path, cfg, "test", "--set", f"env.options.{option}")
    assert code == 2, err[-2000:]
    assert says in " ".join(err.split()) and "Traceback" not in err, err


def test_episode_ids_never_collide_within_a_split(tmp_path: Path) -> None:
    """With seed 8936 two of 6 val episodes used to draw the same reset seed (the run was
    refused: "duplicate item ids in the val split")."""
    cfg = config(tmp_path, "skillgrad.testing:TinyEnv", f"{HOSTILE}:ActionTarget", ", seed: 8936")
    code, err, result = evaluate(tmp_path, cfg)
    assert code == 0, err[-2000:]
    assert result["n"] == 6 and isinstance(result["items"], dict) and len(result["items"]) == 6


def gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        status = Path(f"/proc/{pid}/stat")
        if status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return True  # dead, waiting for init to reap it
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_inside_a_c_call_holding_the_gil_dies_with_a_killed_run(tmp_path: Path) -> None:
    marker = tmp_path / "spinning"
    marker.write_text("")
    options = f', env_options: {{marker: "{marker}"}}, step_timeout: 600'
    cfg = config(tmp_path, f"{HOSTILE}:SpinEnv", f"{HOSTILE}:SpinTarget", options)
    cmd = [*SKILLGRAD, "eval", str(cfg), "--skill", str(tmp_path / "skill.md"), "--split", "test"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(marker.read_text().split()) < 2:
            time.sleep(0.05)
        workers = [int(p) for p in marker.read_text().split()]
        assert len(workers) == 2, "the two steps never started"
        time.sleep(0.5)  # inside sum(): the GIL is held from here on
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert all(gone(w, 5.0) for w in workers), "an environment worker outlived the run"
    finally:
        for pid in (*workers, proc.pid):
            if not gone(pid, 0):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_reset_seeds_are_distinct_and_stable_for_large_splits() -> None:
    from skillgrad.tasks.environment import EnvironmentTask

    big = EnvironmentTask("skillgrad.testing:TinyEnv", n_train=100_000, n_val=6, seed=8936)
    train = [i.id for i in big.load_split("train")]
    val = [i.id for i in big.load_split("val")]
    assert len(set(train)) == 100_000 and len(set(val)) == 6 and not set(train) & set(val)
    again = EnvironmentTask("skillgrad.testing:TinyEnv", n_train=100_000, n_val=6, seed=8936)
    assert [i.id for i in again.load_split("train")] == train  # a resume builds the same items
    # a split that never collided keeps every episode it always had
    old = [f"val-{1_000_000 + random.Random(f'0:val:{i}').randrange(1_000_000)}" for i in range(6)]
    assert [
        i.id for i in EnvironmentTask("skillgrad.testing:TinyEnv", n_val=6).load_split("val")
    ] == old
