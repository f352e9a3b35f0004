"""Environment episodes under ``hardware.executor: ray`` on a real local Ray cluster (127.0.0.1
only): each environment process lives in a Ray actor and is stepped from the driver, where the
episodes and their model calls stay; the scores are those of the local executor; an actor that
died is the item's missing data; the run's secrets stay off the node; ``kill -9`` of a training
driver leaves no Ray worker, environment process or JVM behind, and the resumed run equals an
uninterrupted one."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes_env_hostile import CrashHalfTarget
from interruptible import SKILLGRAD
from skillgrad import load_config, run_training
from skillgrad.executors import LOCAL, RayExecutor, RolloutExecutor, connect, import_ray
from skillgrad.redact import remember_secret
from skillgrad.tasks.env_remote import RemoteEnvProcess
from skillgrad.tasks.environment import EnvironmentTask
from skillgrad.testing import FunctionBackend
from skillgrad.train.rollout import rollout

pytestmark = pytest.mark.slow  # a Ray cluster and subprocesses
TESTS = Path(__file__).parents[1]
HOSTILE = TESTS / "fakes_env_hostile.py"
TAG = "SKILLGRAD_TEST_ENVRAY_TAG"  # inherited by every process a driver starts, reparented or not
REMEMBERED = "a-value-the-run-holds-as-a-secret-0123"  # of SKILLGRAD_PLAIN (no secret-like name)
# Ray's node agents leave on their own within about a minute of their raylet (measured on Ray
# 2.60); every other process of the cluster goes at once
RAY_AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A private Ray cluster on 127.0.0.1 with 2 CPUs, this process its driver; its workers
    inherit the variables set here first."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SKILLGRAD_PLAIN", REMEMBERED)
        env.setenv("MY_SERVICE_TOKEN", "token-0123456789")
        ray = import_ray()
        connect(ray, None, workers=2)
        try:
            yield str(ray.get_runtime_context().gcs_address)
        finally:
            ray.shutdown()


def tiny(executor: RolloutExecutor, env: str = "skillgrad.testing:TinyEnv", **options: Any):
    task = EnvironmentTask(env, n_train=8, n_val=2, n_test=2, max_steps=4, **options)
    task.bind_executor(executor)
    return task


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Which of ``pids`` are still running (not zombies) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in pids if _running(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def episodes(task: EnvironmentTask, skill: str, backend: FunctionBackend) -> list[dict[str, Any]]:
    items = task.load_split("train")
    trajs = asyncio.run(rollout(task, items, skill, backend, workers=2))
    return [dataclasses.asdict(t) for t in trajs]


def test_env_episodes_on_ray_equal_local_ones_each_process_in_an_actor(cluster: str) -> None:
    local = tiny(LOCAL, env_options={"traps": True})
    try:
        expected = episodes(local, "UPPERCASE", CrashHalfTarget())
    finally:
        local.close()
    task = tiny(RayExecutor().start(), env_options={"traps": True})
    found = episodes(task, "UPPERCASE", CrashHalfTarget())
    hosts = list(task.pool.processes)
    try:
        assert found == expected
        # solved episodes and crashed ones (the env's step raised: the episode's end, scored)
        assert {t["score"]["value"] for t in found} == {0.0, 1.0}
        assert any("tiny env crashed on purpose" in (t["error"] or "") for t in found)
        assert all(t["infra_error"] is None for t in found)
        # the processes kept for the next episodes: at most one per worker, each in an actor
        assert 1 <= len(hosts) <= 2 and all(isinstance(h, RemoteEnvProcess) for h in hosts)
        where = [h.where() for h in hosts]  # type: ignore[attr-defined]
        for actor, process in where:
            assert actor != os.getpid() and cmdline(actor).startswith("ray::EnvHost")
            assert parent(process) == actor  # started by the actor, on its node
    finally:
        task.close()
    assert not gone([pid for pair in where for pid in pair]), "an actor outlived close()"


def test_a_dead_env_actor_is_the_items_missing_data_and_takes_its_process(
    cluster: str,
) -> None:
    task = tiny(RayExecutor().start(), env_options={"traps": True}, step_timeout=600)
    item = task.load_split("val")[0]
    hang = FunctionBackend(lambda request: "hang")
    running = asyncio.run(_kill_actor_mid_step(task, item, hang))
    actor, process, traj = running
    try:
        assert traj.infra_error is not None and "Ray actor was lost" in traj.infra_error
        error = {"type": "error", "reason": traj.infra_error, "source": "environment"}
        assert traj.steps[-1] == error  # the environment's failure, not the target's
        assert not gone([process]), "the environment process outlived its actor"
        # the task goes on: the next episode gets a fresh actor
        again = asyncio.run(task.rollout(item, "", FunctionBackend(lambda request: "look")))
        assert again.error is None and again.score.value == 0.0
        assert [h.where()[0] != actor for h in task.pool.processes] == [True]  # type: ignore[attr-defined]
    finally:
        task.close()


async def _kill_actor_mid_step(task: EnvironmentTask, item: Any, backend: FunctionBackend):
    running = asyncio.ensure_future(task.rollout(item, "", backend))
    deadline = time.monotonic() + 60
    while not task.pool.processes:
        await asyncio.sleep(0.05)
    host = next(iter(task.pool.processes))
    assert isinstance(host, RemoteEnvProcess)
    actor, process = await asyncio.to_thread(host.where)
    while not cmdline(process):
        assert time.monotonic() < deadline and not running.done()
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # reset answered, the target said "hang": inside that step now
    assert not running.done()
    os.kill(actor, signal.SIGKILL)
    traj = await asyncio.wait_for(running, 60)
    return actor, process, traj


def test_an_env_process_that_died_between_episodes_is_replaced_as_a_local_one_is(
    cluster: str,
) -> None:
    task = tiny(RayExecutor().start())
    item = task.load_split("val")[0]
    look = FunctionBackend(lambda request: "look")
    try:
        assert asyncio.run(task.rollout(item, "", look)).error is None
        (host,) = task.pool.processes
        actor, process = host.where()  # type: ignore[attr-defined]
        os.kill(process, signal.SIGKILL)  # its actor lives on
        assert not gone([process])
        again = asyncio.run(task.rollout(item, "", look))
        assert again.error is None, again.error  # a fresh actor, not a failed reset
        assert [h.where()[0] for h in task.pool.processes] != [actor]  # type: ignore[attr-defined]
    finally:
        task.close()


def test_binding_the_local_executor_keeps_the_processes_already_started() -> None:
    """The session binds the executor after its start check built the environment once: under
    the local executor that process serves the first episode, it is not closed and rebuilt."""
    task = tiny(LOCAL)
    try:
        item = task.load_split("val")[0]
        assert asyncio.run(task.rollout(item, "", FunctionBackend(lambda r: "look"))).error is None
        before = {p.proc.pid for p in task.pool.processes}  # type: ignore[attr-defined]
        task.bind_executor(LOCAL)
        assert {p.proc.pid for p in task.pool.processes} == before  # type: ignore[attr-defined]
        assert all(_running(pid) for pid in before)
    finally:
        task.close()


def test_the_runs_secrets_stay_off_the_ray_node(cluster: str) -> None:
    remember_secret(REMEMBERED)  # as a config's api_key_env does for the variable it names
    task = tiny(RayExecutor().start(), env=f"{HOSTILE}:EnvironEnv", pass_env=["MY_SERVICE_TOKEN"])
    try:
        item = task.load_split("val")[0]
        traj = asyncio.run(task.rollout(item, "", FunctionBackend(lambda request: "look")))
    finally:
        task.close()
    start = str(traj.steps[0]["observation"])
    assert "SKILLGRAD_PLAIN=-]" in start  # the node's worker has it, the env is not given it
    assert "MY_SERVICE_TOKEN=token-0123456789" in start  # named in pass_env


def train_config(folder: Path, executor: str) -> Path:
    """TinyEnv episodes; the fake target plays them right once its skill has the fake
    optimizer's rule (as in ``tests/tasks/test_environment_runs.py``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(f"""
train: {{num_epochs: 2, batch_size: 4, patience: 5, learning_rate: 4, min_learning_rate: 1,
        lr_decay_on_reject: 0.5, minibatch_size: 2}}
models:
  optimizer: {{provider: function, model: "{TESTS / "fakes_e2e.py"}:FakeOptimizer",
              options: {{latency: 0.02}}}}
  target: {{provider: function, model: "{TESTS / "fakes_env.py"}:FakeEnvTarget",
           options: {{latency: 0.02}}}}
env: {{task: environment, output_root: "{folder / "runs"}", run_name: run,
      options: {{env: "skillgrad.testing:TinyEnv", n_train: 8, n_val: 6, n_test: 4,
                max_steps: 4}}}}
hardware: {{rollout_workers: 2, analyst_workers: 2, executor: {executor}}}
""")
    return path


def comparable(run: Path) -> dict[str, object]:
    history = json.loads((run / "history.json").read_text())
    for record in history:
        record.pop("timings")
    return {
        "history": history,
        "best": (run / "best_skill.md").read_text(),
        "summary": json.loads((run / "summary.json").read_text()),
        "patch_log": (run / "patch_log.jsonl").read_text(),
    }


def driver(config: Path, tag: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "skillgrad", "train", str(config), "--quiet"]
    env = {**os.environ, TAG: tag}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def tagged(tag: str) -> dict[int, str]:
    """Live processes (not zombies) started by the driver tagged ``tag``: pid -> command."""
    found: dict[int, str] = {}
    marker = f"{TAG}={tag}".encode() + b"\0"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ and _running(int(entry.name)):
            found[int(entry.name)] = cmdline(int(entry.name))
    return found


def step_started(run: Path, step: int) -> bool:
    try:
        lines = (run / "events.jsonl").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "step_start" and event.get("step") == step:
            return True
    return False


def kill_driver_mid_run(
    proc: subprocess.Popen[bytes], ready: Callable[[], bool], running: Callable[[], dict[int, str]]
) -> dict[int, str]:
    """``kill -9`` of the driver once ``ready()`` holds; what was ``running()`` then."""
    deadline = time.monotonic() + 180
    try:
        while not ready():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.01)
        found = running()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    return found


def assert_nothing_left(tag: str, running: dict[int, str]) -> None:
    left = {p: c for p, c in tagged(tag).items() if not c.startswith(RAY_AGENTS)}
    deadline = time.monotonic() + 20
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = {p: c for p, c in tagged(tag).items() if not c.startswith(RAY_AGENTS)}
    for pid in tagged(tag):  # Ray's agents: started by this test, not left for a minute
        os.kill(pid, signal.SIGKILL)
    assert not left, f"outlived the driver: {left}\n(running at the kill: {running})"


def test_training_on_ray_killed_leaves_nothing_and_resumes_like_uninterrupted(
    tmp_path: Path,
) -> None:
    reference = run_training(load_config(train_config(tmp_path / "whole", "local")))
    assert reference.summary["status"] == "finished"
    expected = comparable(reference.run_dir)
    config = train_config(tmp_path / "cut", "ray")
    run = tmp_path / "cut" / "runs" / "run"
    tag = str(tmp_path)
    ready = functools.partial(step_started, run, 2)
    running = kill_driver_mid_run(driver(config, tag), ready, functools.partial(tagged, tag))
    commands = list(running.values())
    assert any(c.startswith("ray::EnvHost") for c in commands), commands
    assert any("skillgrad.tasks.env_worker" in c for c in commands), commands
    assert_nothing_left(tag, running)
    again = driver(config, tag + "-again")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()[-3000:]
    assert_nothing_left(tag + "-again", {})
    assert comparable(run) == expected


def descendants(root: int) -> dict[int, str]:
    """Live processes below ``root``: pid -> command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _running(int(entry.name)):
            try:
                children.setdefault(parent(int(entry.name)), []).append(int(entry.name))
            except (OSError, IndexError):
                continue
    found, todo = {}, [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found[pid] = cmdline(pid)
            todo.append(pid)
    return found


def test_a_killed_driver_on_an_attached_cluster_leaves_no_actor_or_jvm(
    tmp_path: Path, cluster: str
) -> None:
    """TextWorldExpress (a JVM per environment) on the cluster this test started, attached to
    by a ``skillgrad eval`` driver killed while its two episodes wait for the target."""
    pytest.importorskip("textworld_express", reason="install with: pip install 'skillgrad[env]'")
    config = tmp_path / "twx.yaml"
    config.write_text(f"""
models:
  optimizer: {{provider: function, model: "{TESTS / "fakes_env.py"}:FakeEnvTarget"}}
  target: {{provider: function, model: "{TESTS / "fakes_env.py"}:FakeEnvTarget",
           options: {{latency: 3600}}}}
env: {{task: textworld_express, output_root: "{tmp_path / "runs"}",
      options: {{game: coin, n_train: 1, n_val: 1, n_test: 2}}}}
hardware: {{rollout_workers: 2, executor: ray, ray_address: "{cluster}"}}
""")
    (tmp_path / "skill.md").write_text("Act.\n")
    cmd = [sys.executable, "-m", "skillgrad", "eval", str(config), "--skill"]
    cmd += [str(tmp_path / "skill.md"), "--split", "test"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def on_cluster() -> dict[int, str]:  # the cluster's processes are this test's descendants
        wanted = ("ray::EnvHost", "skillgrad.tasks.env_worker")
        found = descendants(os.getpid()).items()
        return {p: c for p, c in found if c.startswith(wanted) or "env_worker" in c or _jvm(c)}

    running = kill_driver_mid_run(
        proc, lambda: sum(map(_jvm, on_cluster().values())) >= 2, on_cluster
    )
    assert sum(c.startswith("ray::EnvHost") for c in running.values()) == 2, running
    assert not (left := gone(list(running), timeout=30)), {p: running[p] for p in left}
    assert import_ray().is_initialized()  # the cluster itself goes on


def _jvm(command: str) -> bool:
    return command.split(" ", 1)[0].endswith("/java") or command.startswith("java ")


def test_ctrl_c_during_hanging_steps_on_ray_ends_the_run_and_its_actors(tmp_path: Path) -> None:
    """Both episodes wait inside a step that never answers, each in an actor of the run's private
    cluster: Ctrl-C ends the run at once, with its actors, environments and cluster."""
    config = tmp_path / "hang.yaml"
    config.write_text(f"""
models:
  optimizer: {{provider: function, model: "{TESTS / "fakes_env.py"}:HangingEnvTarget"}}
  target: {{provider: function, model: "{TESTS / "fakes_env.py"}:HangingEnvTarget"}}
env: {{task: environment, output_root: "{tmp_path / "runs"}",
      options: {{env: "skillgrad.testing:TinyEnv", env_options: {{traps: true}},
                n_train: 1, n_val: 1, n_test: 2, step_timeout: 600}}}}
hardware: {{rollout_workers: 2, executor: ray}}
""")
    (tmp_path / "skill.md").write_text("Act.\n")
    cmd = [*SKILLGRAD, "eval", str(config), "--skill", str(tmp_path / "skill.md")]
    tag = str(tmp_path)
    env = {**os.environ, TAG: tag}
    proc = subprocess.Popen([*cmd, "--split", "test"], env=env, stderr=subprocess.PIPE)

    def hosts() -> int:
        return sum(c.startswith("ray::EnvHost") for c in tagged(tag).values())

    deadline = time.monotonic() + 120
    while hosts() < 2 or sum("env_worker" in c for c in tagged(tag).values()) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the episodes never started"
        time.sleep(0.05)
    time.sleep(1.0)  # both episodes are now inside the hanging step
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    # measured 1.7 s; 11.7 s when each actor's stop waited for its hanging call first
    assert proc.returncode != 0 and time.monotonic() - started < 8
    assert_nothing_left(tag, {})
