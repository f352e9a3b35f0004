"""``hardware.executor: ray`` on a real local Ray cluster (127.0.0.1 only; one cluster for this
module, started here; the executor reuses it and leaves it running): the sandbox runs of the
``code`` benchmark (real bubblewrap) and whole agent runs become Ray tasks, while every model
call stays on the driver (its call cache and ledger); a killed Ray worker is missing data, not a
zero; an exception inside a job comes back as itself; a sweep whose runs send their rollouts to
the same cluster finishes."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from executor_helpers import AGENT_KEY, SKILL, agent_task, code_config
from fakes_executors import Optimizer, code_reply

from skillgrad import load_config, run_training
from skillgrad.benchmarks.code import CodeBenchmark
from skillgrad.errors import ConfigError
from skillgrad.executors import JobLost, RayExecutor, import_ray
from skillgrad.models.function import FunctionBackend
from skillgrad.runs.cache import CallCache
from skillgrad.skill.package import SkillPackage
from skillgrad.train.rollout import rollout
from skillgrad.types import ChatRequest

pytestmark = pytest.mark.slow


def counting(reply: Callable[[ChatRequest], str], seen: Counter[str]) -> FunctionBackend:
    def answer(request: ChatRequest) -> str:
        seen[request.messages[-1].content] += 1
        return reply(request)

    return FunctionBackend(answer, "function:code-target")


def train_code(folder: Path, executor: str) -> tuple[CodeBenchmark, Counter[str], Path]:
    """Train the code benchmark in-process; the task (its bound executor), every target call
    the driver paid for, and the run directory."""
    cfg = load_config(code_config(folder, executor))
    task = CodeBenchmark(n_train=2, n_val=3, n_test=3)
    paid: Counter[str] = Counter()
    result = run_training(cfg, task=task, optimizer=Optimizer(), target=counting(code_reply, paid))
    assert result.summary["status"] == "finished", result.summary
    return task, paid, result.run_dir


def item_scores(run: Path) -> dict[tuple[str, str], float]:
    """Every trajectory's score, by (file, item id)."""
    out: dict[tuple[str, str], float] = {}
    for path in sorted(run.rglob("trajectories*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out[(str(path.relative_to(run)), row["item_id"])] = row["score"]["value"]
    return out


def sandbox_runs(run: Path) -> int:
    return sum(
        1
        for path in run.rglob("trajectories*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
        if '"type": "sandbox"' in line
    )


def test_code_on_ray_scores_like_local_and_every_call_is_paid_on_the_driver(
    tmp_path: Path, ray_cluster: str
) -> None:
    local_task, local_paid, local_run = train_code(tmp_path / "local", "local")
    ray_task, ray_paid, ray_run = train_code(tmp_path / "ray", "ray")
    assert local_task.executor.name == "local"
    executor = ray_task.executor
    assert isinstance(executor, RayExecutor) and executor.jobs > 0
    assert executor.jobs >= sandbox_runs(ray_run) > 0  # the sandbox ran as Ray tasks
    # same scores item by item (some solved, some not), same model calls, paid here
    scores = item_scores(ray_run)
    assert scores == item_scores(local_run)
    assert {0.0, 1.0} <= set(scores.values())
    assert ray_paid == local_paid and sum(ray_paid.values()) > 0
    for run, paid in ((ray_run, ray_paid), (local_run, local_paid)):
        store = CallCache(run / "calls.sqlite")
        try:
            assert store.totals()["target"]["calls"] == sum(paid.values())
        finally:
            store.close()
    assert import_ray().is_initialized()  # the module's cluster was reused, not shut down
    # a re-run of the finished run pays for nothing
    again: Counter[str] = Counter()
    cfg = load_config(code_config(tmp_path / "ray", "ray"))
    run_training(
        cfg,
        run_dir=ray_run,
        task=CodeBenchmark(n_train=2, n_val=3, n_test=3),
        optimizer=Optimizer(),
        target=counting(code_reply, again),
    )
    assert not again


def ray_workers_running(function: str) -> list[int]:
    """Pids of this process's Ray workers (descendants of it) now running ``function``."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if title.startswith(f"ray::{function}") and _descends_from(int(entry.name), me):
            found.append(int(entry.name))
    return found


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(10):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


async def test_a_killed_ray_worker_is_an_infrastructure_failure_not_a_zero(
    ray_cluster: str,
) -> None:
    task = CodeBenchmark(n_train=1, n_val=1, n_test=1, timeout_s=60)
    executor = RayExecutor().start()
    task.bind_executor(executor)
    slow = "```python\nimport time\ntime.sleep(40)\n```"
    item = task.load_split("val")[0]
    running = asyncio.ensure_future(task.rollout(item, "", FunctionBackend(lambda r: slow)))
    deadline = time.monotonic() + 30
    while not (pids := ray_workers_running("call_job")):
        assert time.monotonic() < deadline, "the sandbox job never started on a Ray worker"
        assert not running.done(), running.result()
        await asyncio.sleep(0.05)
    os.kill(pids[0], signal.SIGKILL)
    traj = await asyncio.wait_for(running, 30)
    assert traj.infra_error is not None, traj
    assert "Ray lost the job" in traj.infra_error and "sandbox failed" in traj.infra_error
    assert traj.score.value == 0.0 and traj.error == traj.infra_error
    # the executor keeps working: the next job gets a fresh worker
    assert await executor.run(functools.partial(os.getpid)) != os.getpid()
    executor.close()
    assert import_ray().is_initialized()  # not started by this executor: left running


async def test_an_exception_inside_a_job_is_raised_on_the_driver_as_itself(
    tmp_path: Path, ray_cluster: str
) -> None:
    executor = RayExecutor().start()
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError, match="does not exist") as raised:
        await executor.run(functools.partial(load_config, str(missing)))
    assert type(raised.value) is ConfigError and str(missing) in str(raised.value)
    with pytest.raises(ValueError, match="invalid literal") as value_error:
        await executor.run(functools.partial(int, "not a number"))
    assert type(value_error.value) is ValueError
    with pytest.raises(JobLost, match="WorkerCrashedError"):
        await executor.run(functools.partial(os._exit, 3))
    executor.close()


def most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


async def test_agents_run_on_ray_at_most_max_parallel_at_once(
    tmp_path: Path, ray_cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", AGENT_KEY)  # the driver checks it too (the workers have it)
    task = agent_task(tmp_path, max_parallel=2)
    executor = RayExecutor().start()
    task.bind_executor(executor)
    skill = SkillPackage.from_files({"SKILL.md": SKILL}).bundle()
    items = task.load_split("val")
    job = task.agent_job(items[0], skill)
    shipped = import_ray().cloudpickle.dumps(job)  # what a Ray task carries
    assert b"AGENT_KEY" in shipped and AGENT_KEY.encode() not in shipped  # the name, not the key
    unused = FunctionBackend(lambda r: pytest.fail("a harness task never calls the target"))
    trajs = await rollout(task, items, skill, unused, workers=len(items))
    executor.close()
    assert executor.jobs == len(items)
    assert all(t.score.passed for t in trajs), [t.score.feedback for t in trajs]
    spans = []
    for traj in trajs:
        _, start, end, key = traj.output.split()
        spans.append((float(start), float(end)))
        assert key == "key=***"  # the node's key is scrubbed before the result leaves it
        assert AGENT_KEY not in json.dumps([traj.output, list(traj.steps)])
    # the cap, not a speed: on a loaded machine Ray may start them one after another (the CI
    # run of 2026-11-24 beside two sweeps: 1 at once), which is not a failure of the cap
    assert 1 <= most_at_once(spans) <= 2


def test_a_sweep_whose_runs_send_rollouts_to_ray_finishes(tmp_path: Path, ray_cluster: str) -> None:
    """Each run is a Ray task whose sandbox runs are Ray tasks too: the runs declare no CPUs,
    else two runs would hold both CPUs while their rollouts wait for one."""
    config = code_config(tmp_path, "ray")
    cmd = [
        sys.executable, "-m", "skillgrad", "sweep", str(config), "--out", str(tmp_path / "sweep"),
        "--seeds", "2", "--executor", "ray", "--ray-address", ray_cluster, "--workers", "2",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=os.environ)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    runs = [p for p in (tmp_path / "sweep").iterdir() if (p / "summary.json").exists()]
    assert len(runs) == 2
    for run in runs:
        assert json.loads((run / "summary.json").read_text())["status"] == "finished"
        assert sandbox_runs(run) > 0
    assert import_ray().is_initialized()  # the runs' executors left the cluster running
