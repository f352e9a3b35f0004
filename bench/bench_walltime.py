"""Wall time of one training config with old code and new code, run back to back on this machine.

Each arm runs ``skillgrad train CONFIG --fresh --quiet`` from its own source tree (a detached git
worktree per revision, removed afterwards, or a given directory) in its own process session, so an
interrupted bench leaves no training process behind to slow down the next measurement.

    python bench/bench_walltime.py --old c28278c --new . --config configs/twx-peck.yaml --out DIR
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCORES = ("status", "val_initial", "val_best", "test_initial", "test_best")
GRACE_S = 10.0  # a stopped run's time to close its files before the group is killed


class BenchError(Exception):
    """A bad argument or a machine not idle enough to measure on (exit code 2)."""


@dataclass
class Tree:
    source: Path  # the checkout whose src/skillgrad runs
    commit: str
    dirty: bool
    path: Path  # its PYTHONPATH entry (see make_shim)


@dataclass
class Arm:
    name: str
    rev: str
    sets: list[str]


def git(*args: str, cwd: Path = REPO) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"git {' '.join(args)} in {cwd}: {done.stderr.strip()}")
    return done.stdout.strip()


def make_shim(source: Path, where: Path) -> Path:
    """A PYTHONPATH entry importing ``skillgrad`` from ``source`` with the entry points of that
    tree's pyproject.toml: the installed distribution's metadata names the installed tree's
    command and plugin modules, which another revision may not have."""
    project = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    info = where / f"{project['name']}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    meta = f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    info.joinpath("METADATA").write_text(meta, encoding="utf-8")
    text = "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
        for group, points in groups.items()
    )
    info.joinpath("entry_points.txt").write_text(text, encoding="utf-8")
    (where / "skillgrad").symlink_to(source / "src" / "skillgrad", target_is_directory=True)
    return where


def prepare(rev: str, tmp: Path, trees: dict[str, Tree]) -> Tree:
    """The tree of ``rev``: a directory as it is, else a detached worktree of that commit."""
    if Path(rev).is_dir():
        source = Path(rev).resolve()
        commit = git("rev-parse", "HEAD", cwd=source)
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", cwd=source))
    else:
        try:
            commit = git("rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}")
        except BenchError as exc:
            raise BenchError(f"{rev!r} is neither a directory nor a commit ({exc})") from None
        source, dirty = tmp / f"tree-{commit[:12]}", False
    if str(source) not in trees:
        if not source.exists():
            git("worktree", "add", "--detach", str(source), commit)
        shim = make_shim(source, tmp / f"shim-{len(trees)}")
        trees[str(source)] = Tree(source, commit, dirty, shim)
    return trees[str(source)]


def parse_arm(text: str, old: str, new: str) -> Arm:
    """``NAME:REV[:KEY=VALUE ...]``; REV ``old``/``new`` stands for --old/--new."""
    name, _, rest = text.partition(":")
    rev, _, sets = rest.partition(":")
    try:
        pairs = shlex.split(sets)
    except ValueError:  # an unclosed quote
        pairs = [""]
    named = re.fullmatch(r"\w[\w.-]*", name)  # it names files under --out
    if not named or not rev or any("=" not in p for p in pairs):
        raise BenchError(
            f"--arm {text!r}: expected NAME:REV[:KEY=VALUE ...], NAME of letters, digits, _.-"
        )
    return Arm(name, {"old": old, "new": new}.get(rev, rev), pairs)


def wait_idle(max_load: float, settle_s: float) -> float:
    """The 1-minute load average, after waiting up to ``settle_s`` for it to fall to
    ``max_load`` (the previous arm's own load takes a minute or two to decay)."""
    deadline = time.monotonic() + settle_s
    while (load := os.getloadavg()[0]) > max_load and time.monotonic() < deadline:
        time.sleep(min(5.0, max(0.1, deadline - time.monotonic())))
    return load


def end_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop every process of the arm's session: the run and whatever it started."""
    for sig, grace in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)


def read_summary(run_dir: Path) -> dict[str, Any]:
    found = sorted(run_dir.glob("*/summary.json"))
    try:
        data = json.loads(found[0].read_text(encoding="utf-8")) if found else {}
    except (OSError, ValueError) as exc:
        return {"summary_error": f"{found[0]}: {exc}"}
    usage = (data.get("usage") or {}).get("all") or {}
    return {
        **{k: data.get(k) for k in SCORES},
        **{k: usage.get(k) for k in ("calls", "prompt_tokens", "completion_tokens")},
        "ran_commit": (data.get("code") or {}).get("commit"),
    }


def run_arm(arm: Arm, tree: Tree, rep: int, args: argparse.Namespace) -> dict[str, Any]:
    load = wait_idle(args.max_load, args.settle)
    if load > args.max_load and not args.force:
        raise BenchError(
            f"load average {load:.2f} > --max-load {args.max_load} before arm {arm.name!r}: "
            "another job is using the CPU (see `top`); wait for it, or pass --force to measure "
            "anyway (recorded as load_over_limit)"
        )
    if load > args.max_load:
        print(f"WARNING: load {load:.2f} > {args.max_load}: {arm.name} is measured on a busy "
              "machine", file=sys.stderr)  # fmt: skip
    run_dir = args.out / f"{arm.name}-{rep}"
    sets = [x for s in [f"env.output_root={run_dir}", *arm.sets] for x in ("--set", s)]
    cmd = [args.python, "-m", "skillgrad", "train", str(args.config), "--fresh", "--quiet", *sets]
    env = {**os.environ, "PYTHONPATH": str(tree.path)}
    with open(args.out / f"{arm.name}-{rep}.log", "wb") as log:
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd, cwd=tree.source, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = proc.wait()
            wall = time.monotonic() - start
        finally:
            end_group(proc)
    return {
        "arm": arm.name, "rep": rep, "commit": tree.commit, "dirty": tree.dirty,
        "sets": arm.sets, "returncode": code, "wall_s": round(wall, 2),
        "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
        "load_over_limit": load > args.max_load, **read_summary(run_dir),
    }  # fmt: skip


def summarize(arms: list[Arm], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm: its commit, walls and mean wall of its successful runs, and mean / baseline's."""
    out: dict[str, Any] = {}
    for arm in arms:
        walls = [r["wall_s"] for r in runs if r["arm"] == arm.name and r["returncode"] == 0]
        mean = sum(walls) / len(walls) if walls else None
        commits = sorted({r["commit"] for r in runs if r["arm"] == arm.name})
        out[arm.name] = {"commits": commits, "walls_s": walls, "mean_wall_s": mean}
    base = out[arms[0].name]["mean_wall_s"]
    for item in out.values():
        mean = item["mean_wall_s"]
        item["ratio"] = round(mean / base, 3) if mean is not None and base else None
    return out


def table(result: dict[str, Any]) -> str:
    def pair(run: dict[str, Any], key: str) -> str:
        return f"{run.get(f'{key}_initial')} → {run.get(f'{key}_best')}"

    lines = [
        "| arm | rep | commit | rc | wall s | load before → after | val | test | calls | tokens |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["runs"]:
        tokens = (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)
        lines.append(
            f"| {r['arm']} | {r['rep']} | {r['commit'][:9]}{'+' if r['dirty'] else ''} | "
            f"{r['returncode']} | {r['wall_s']} | {r['load_before']} → {r['load_after']}"
            f"{' (over limit)' if r['load_over_limit'] else ''} | {pair(r, 'val')} | "
            f"{pair(r, 'test')} | {r.get('calls')} | {tokens} |"
        )
    lines += [""] + [f"{name}: mean {a['mean_wall_s']} s, {a['ratio']}× {result['baseline']}"
                     for name, a in result["arms"].items()]  # fmt: skip
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--old", required=True, help="revision (or directory) of the old code")
    p.add_argument("--new", required=True, help="revision or directory (a worktree) of the new")
    p.add_argument("--config", required=True, type=Path, help="relative: each tree's own copy")
    p.add_argument("--arm", action="append", default=[], metavar="NAME:REV[:KEY=VALUE ...]",
                   help="instead of old:old new:new; the first is the baseline")  # fmt: skip
    p.add_argument("--repeat", type=int, default=1, help="rounds, alternating the arms' order")
    p.add_argument("--out", required=True, type=Path, help="walltime.json, logs and run dirs")
    p.add_argument("--max-load", type=float, default=1.0, help="refuse an arm above this load")
    p.add_argument("--settle", type=float, default=120.0, help="seconds to wait for that load")
    p.add_argument("--force", action="store_true", help="measure above --max-load (recorded)")
    p.add_argument("--python", default=sys.executable, help="the interpreter of every arm")
    args = p.parse_args(argv)
    args.out = args.out.resolve()
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM and SIGHUP stop the bench as Ctrl-C does; a second signal must not cut short
    the cleanup (the arm's process group, the worktrees)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt


def measure(args: argparse.Namespace, result: dict[str, Any], tmp: Path) -> None:
    specs = args.arm or ["old:old", "new:new"]
    arms = [parse_arm(text, args.old, args.new) for text in specs]
    if len({a.name for a in arms}) < len(arms):
        raise BenchError("--arm: two arms share a name")
    trees: dict[str, Tree] = {}
    chosen = {a.name: prepare(a.rev, tmp, trees) for a in arms}
    for arm in arms:
        if not (chosen[arm.name].source / args.config).is_file():
            raise BenchError(f"--config {args.config}: no such file in {chosen[arm.name].source}")
        if any((args.out / f"{arm.name}-{rep}").exists() for rep in range(args.repeat)):
            raise BenchError(f"{args.out} already holds runs of arm {arm.name!r}: pick a new --out")
    result["baseline"] = arms[0].name
    for rep in range(args.repeat):
        for arm in arms if rep % 2 == 0 else arms[::-1]:
            result["runs"].append(run_arm(arm, chosen[arm.name], rep, args))
            result["arms"] = summarize(arms, result["runs"])
            write(args.out, result)


def write(out: Path, result: dict[str, Any]) -> None:
    (out / "walltime.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)  # also when started with SIGINT ignored (`cmd &`)
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "config": str(args.config), "python": args.python, "max_load": args.max_load,
        "cpus": os.cpu_count(), "status": "complete", "baseline": None, "arms": {}, "runs": [],
    }  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="bench-walltime-"))
    code = 0
    try:
        measure(args, result, tmp)
    except BenchError as exc:
        result["status"], code = f"refused: {exc}", 2
        print(f"bench_walltime: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        result["status"], code = "interrupted", 130
        print("bench_walltime: interrupted; the running arm was stopped", file=sys.stderr)
    finally:
        for tree in sorted(tmp.glob("tree-*")):
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                           capture_output=True, check=False)  # fmt: skip
        shutil.rmtree(tmp, ignore_errors=True)
        write(args.out, result)
    if result["runs"]:
        print(table(result))
        (args.out / "walltime.md").write_text(table(result) + "\n", encoding="utf-8")
    failed = any(r["returncode"] != 0 for r in result["runs"])
    return code or int(failed)


if __name__ == "__main__":
    sys.exit(main())
