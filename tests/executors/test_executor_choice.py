"""Choosing ``hardware.executor``: a task without heavy rollouts (chat) runs here and starts no
Ray; without Ray installed, ``executor: ray`` is a clear configuration error (exit 2, the
install command) before any model call; with no cluster running, a run starts a private one on
127.0.0.1 for itself and shuts it down at the end (one cluster start-up in this module); an
agent job on a node without the endpoint's key variable says which node."""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from executor_helpers import AGENT_KEY, SKILL, agent_task, code_config
from fakes_executors import Optimizer, Target

from skillgrad import load_config, run_training
from skillgrad.benchmarks.code import CodeBenchmark
from skillgrad.errors import ConfigError
from skillgrad.executors import LOCAL, RayExecutor, import_ray
from skillgrad.runs.cache import CallCache
from skillgrad.session import open_session
from skillgrad.skill.package import SkillPackage
from skillgrad.testing import FunctionBackend, ToyTask


def test_a_chat_task_with_executor_ray_runs_here_without_ray(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ray = import_ray()
    assert not ray.is_initialized()
    cfg = load_config(data={"hardware": {"executor": "ray"}, "env": {"task": "toy"}})
    store = CallCache(tmp_path / "calls.sqlite")
    echo = FunctionBackend(lambda r: "X")
    with caplog.at_level(logging.INFO, logger="skillgrad.session"):
        session = open_session(cfg, store, task=ToyTask(), optimizer=echo, target=echo)
    try:
        assert session.executor is LOCAL
        assert "hardware.executor ray: task toy has no heavy rollouts; run here" in caplog.text
        assert not ray.is_initialized()
    finally:
        store.close()


BLOCK_RAY = (
    "import sys; sys.modules['ray'] = None\n"  # `import ray` now raises ImportError
    "from skillgrad.cli.main import app\n"
    "app(sys.argv[1:], prog_name='skillgrad')\n"
)


def test_executor_ray_without_ray_installed_is_a_config_error(tmp_path: Path) -> None:
    config = code_config(tmp_path, "ray")
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_RAY, "train", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    message = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, message
    assert "hardware.executor: ray needs Ray, which is not installed here" in message
    assert "pip install 'skillgrad[ray]'" in message
    assert "Traceback" not in done.stderr
    store = CallCache(tmp_path / "runs" / "code" / "calls.sqlite")  # the run's ledger
    try:
        assert store.totals()["all"]["calls"] == 0  # refused before any model call
    finally:
        store.close()


@pytest.mark.slow
def test_a_run_starts_its_own_local_cluster_and_shuts_it_down(tmp_path: Path) -> None:
    ray = import_ray()
    assert not ray.is_initialized()
    cfg = load_config(code_config(tmp_path, "ray"))
    task = CodeBenchmark(n_train=2, n_val=2, n_test=2)
    result = run_training(cfg, task=task, optimizer=Optimizer(), target=Target())
    assert result.summary["status"] == "finished", result.summary
    executor = task.executor
    assert isinstance(executor, RayExecutor) and executor.jobs > 0
    assert not ray.is_initialized()  # the cluster it started is gone with the run


def test_an_agent_job_where_the_key_variable_is_unset_names_the_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", AGENT_KEY)
    task = agent_task(tmp_path, max_parallel=1)
    skill = SkillPackage.from_files({"SKILL.md": SKILL}).bundle()
    job = task.agent_job(task.load_split("val")[0], skill)
    monkeypatch.delenv("AGENT_KEY")  # the process running the job lacks it
    expected = f"on node {socket.gethostname()}: the agent endpoint's key variable AGENT_KEY"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        job()
