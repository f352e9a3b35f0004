"""``bench/bench_walltime.py`` on the fake models: two trees train back to back and the JSON
reports each arm's wall time, commit and result; each revision imports its own entry points;
Ctrl-C mid-arm leaves no training process; a busy machine is refused; bad input exits 2."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "bench_walltime.py"
FAKES = REPO / "tests" / "fakes_e2e.py"


def _config(tmp: Path, latency: float = 0.0, epochs: int = 1) -> Path:
    fake = f'{{provider: function, model: "{FAKES}:ROLE", options: {{latency: {latency}}}}}'
    path = tmp / "toy.yaml"
    path.write_text(
        f"train: {{num_epochs: {epochs}, batch_size: 2, minibatch_size: 2}}\n"
        f"models:\n  optimizer: {fake.replace('ROLE', 'FakeOptimizer')}\n"
        f"  target: {fake.replace('ROLE', 'FakeTarget')}\n"
        "env: {task: toy, options: {n_train: 4, n_val: 4, n_test: 4}}\n"
        "hardware: {rollout_workers: 1, analyst_workers: 1}\n",
        encoding="utf-8",
    )
    return path


def _bench_cmd(config: Path, out: Path, *args: str) -> list[str]:
    return [sys.executable, str(BENCH), "--config", str(config), "--out", str(out), *args]


def _env(tmp: Path) -> dict[str, str]:
    (tmp / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp / "tmp")}  # the bench's worktrees land under tmp


def _bench(tmp: Path, config: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _bench_cmd(config, out, *args), cwd=REPO, env=_env(tmp),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _worktrees_under(tmp: Path) -> list[str]:
    listing = subprocess.run(
        ["git", "-C", str(REPO), "worktree", "list", "--porcelain"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line for line in listing.splitlines() if str(tmp) in line]


def _head(tree: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_old_and_new_code_train_back_to_back_and_report_wall_and_result(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--old", "HEAD", "--new", str(REPO), "--repeat", "2", "--max-load", "1000"]
    done = _bench(tmp_path, _config(tmp_path), out, *args, "--settle", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads((out / "walltime.json").read_text(encoding="utf-8"))
    runs = result["runs"]
    assert [(r["arm"], r["rep"]) for r in runs] == [("old", 0), ("new", 0), ("new", 1), ("old", 1)]
    assert {r["commit"] for r in runs} == {_head(REPO)}
    for run in runs:
        assert run["returncode"] == 0 and run["wall_s"] > 0 and run["status"] == "finished"
        assert run["load_before"] >= 0 and not run["load_over_limit"]
        same = ("val_initial", "val_best", "test_initial", "test_best", "calls", "prompt_tokens")
        assert {k: run[k] for k in same} == {k: runs[0][k] for k in same}
        assert run["val_best"] == 1.0 and run["calls"] > 0
        assert (out / f"{run['arm']}-{run['rep']}.log").is_file()
    old, new = result["arms"]["old"], result["arms"]["new"]
    assert result["baseline"] == "old" and old["ratio"] == 1.0
    assert old["mean_wall_s"] == pytest.approx(sum(old["walls_s"]) / 2)
    assert new["ratio"] == round(new["mean_wall_s"] / old["mean_wall_s"], 3)
    assert "| old | 0 |" in done.stdout and (out / "walltime.md").is_file()
    assert _worktrees_under(tmp_path) == []  # the old revision's worktree is removed


def _imported_with(path: Path) -> dict[str, Any]:
    """What ``import skillgrad`` finds with PYTHONPATH=path: command entry points, version, file."""
    probe = (
        "import importlib.metadata as m, json, skillgrad; print(json.dumps({"
        "'commands': sorted(e.name for e in m.entry_points(group='skillgrad.commands')), "
        "'version': m.version('skillgrad'), 'file': skillgrad.__file__}))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": str(path)},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(shown.stdout))


def test_a_tree_runs_with_the_entry_points_of_its_own_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("bench_walltime", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_walltime", bench)  # its dataclasses look it up
    spec.loader.exec_module(bench)
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "skillgrad").symlink_to(REPO / "src" / "skillgrad")
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "skillgrad"\nversion = "0.0.7"\n'
        '[project.entry-points."skillgrad.commands"]\nonly = "skillgrad.cli.models:register"\n',
        encoding="utf-8",
    )
    shim = bench.make_shim(tree, tmp_path / "shim")
    assert _imported_with(shim) == {
        "commands": ["only"], "version": "0.0.7", "file": str(shim / "skillgrad" / "__init__.py")
    }  # fmt: skip
    # the tree's src alone: the installed distribution's entry points, which name modules
    # another revision may not have (the trap the shim avoids)
    assert _imported_with(tree / "src")["commands"] != ["only"]


def _processes_naming(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in cmdline:
                pids.append(int(entry.name))
    return pids


def test_ctrl_c_mid_arm_leaves_no_training_process(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = _config(tmp_path, latency=1.0, epochs=3)
    cmd = _bench_cmd(config, out, "--old", str(REPO), "--new", str(REPO), "--max-load", "1000")
    bench = subprocess.Popen(
        [*cmd, "--settle", "0"], cwd=REPO, env=_env(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 45
        while not list(out.glob("old-0/*/events.jsonl")) and time.monotonic() < deadline:
            assert bench.poll() is None, bench.communicate()
            time.sleep(0.1)
        assert _processes_naming(f"env.output_root={out}"), "the arm's training never started"
        bench.send_signal(signal.SIGINT)
        _, err = bench.communicate(timeout=40)
        assert bench.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        assert _processes_naming(f"env.output_root={out}") == []
        assert json.loads((out / "walltime.json").read_text())["status"] == "interrupted"
    finally:
        for pid in _processes_naming(str(out)):
            os.kill(pid, signal.SIGKILL)


def test_busy_machine_refused_or_forced_and_arms_take_their_settings(tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "out"
    args = ["--old", "HEAD", "--new", str(REPO), "--max-load", "-1", "--settle", "0"]
    refused = _bench(tmp_path, config, out, *args)
    assert refused.returncode == 2 and "--max-load" in refused.stderr
    assert "Traceback" not in refused.stderr
    result = json.loads((out / "walltime.json").read_text(encoding="utf-8"))
    assert result["status"].startswith("refused") and result["runs"] == []
    assert _worktrees_under(tmp_path) == []
    arms = ["--arm", "plain:new", "--arm", "set:new:hardware.rollout_workers=3 train.seed=5"]
    forced = _bench(tmp_path, config, tmp_path / "forced", *args, *arms, "--force")
    assert forced.returncode == 0 and "WARNING" in forced.stderr
    runs = json.loads((tmp_path / "forced" / "walltime.json").read_text())["runs"]
    assert [r["arm"] for r in runs] == ["plain", "set"] and all(r["load_over_limit"] for r in runs)
    assert runs[1]["sets"] == ["hardware.rollout_workers=3", "train.seed=5"]
    (recorded,) = (tmp_path / "forced" / "set-0").glob("*/config.json")
    config_used = json.loads(recorded.read_text(encoding="utf-8"))
    assert config_used["hardware"]["rollout_workers"] == 3 and config_used["train"]["seed"] == 5


@pytest.mark.parametrize(
    "args, message",
    [
        (["--old", "no-such-revision-x"], "neither a directory nor a commit"),
        (["--old", "HEAD", "--arm", "broken"], "expected NAME:REV"),
        (["--old", "HEAD", "--arm", "a:new:nokeyvalue"], "expected NAME:REV"),
        (["--old", "HEAD", "--arm", "../up:new"], "expected NAME:REV"),
        (["--old", "HEAD", "--arm", "a:new:k='unclosed"], "expected NAME:REV"),
        (["--old", "HEAD", "--config", "configs/no-such.yaml"], "no such file"),
    ],
)
def test_bad_input_exits_2_with_a_located_message(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = _bench(tmp_path, _config(tmp_path), tmp_path / "out", "--new", str(REPO), *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and _worktrees_under(tmp_path) == []
