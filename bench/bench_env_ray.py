"""Environment episodes per second, ``hardware.executor`` local against ray, 1 and 2 workers.

``skillgrad.testing.TinyEnv`` episodes (a reset and three steps each) played by an instant fake
target that solves them, so the time is the environment round trips and the episode loop, not
a model. Each setting first plays one warm-up round (processes, or Ray actors, started), then
``--episodes`` episodes timed. Ray: a private local cluster (127.0.0.1, this machine's CPUs)
started once, its start-up reported apart.

    .venv/bin/python bench/bench_env_ray.py --episodes 60 --workers 1 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from skillgrad.executors import LOCAL, RayExecutor, RolloutExecutor
from skillgrad.tasks.environment import EnvironmentTask
from skillgrad.testing import FunctionBackend, user_text
from skillgrad.train.rollout import rollout

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakes_env import play  # the tests' TinyEnv player

TARGET = FunctionBackend(lambda request: play(user_text(request)), "function:instant-player")


def timed(executor: RolloutExecutor, workers: int, episodes: int) -> dict[str, Any]:
    task = EnvironmentTask("skillgrad.testing:TinyEnv", n_train=0, n_val=workers, n_test=episodes)
    task.bind_executor(executor)
    try:
        start = time.monotonic()
        warm = asyncio.run(rollout(task, task.load_split("val"), "", TARGET, workers=workers))
        warmup = time.monotonic() - start
        start = time.monotonic()
        trajs = asyncio.run(rollout(task, task.load_split("test"), "", TARGET, workers=workers))
        wall = time.monotonic() - start
    finally:
        task.close()
    solved = sum(t.score.passed for t in [*warm, *trajs])
    assert solved == workers + episodes, f"{solved} of {workers + episodes} solved"
    calls = 4 * episodes  # a reset and three steps each
    return {
        "executor": executor.name,
        "workers": workers,
        "warmup_s": round(warmup, 2),
        "episodes_per_s": round(episodes / wall, 1),
        "ms_per_env_call": round(1000 * wall * workers / calls, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rows = [timed(LOCAL, w, args.episodes) for w in args.workers]
    start = time.monotonic()
    ray = RayExecutor().start()
    startup = time.monotonic() - start
    try:
        rows += [timed(ray, w, args.episodes) for w in args.workers]
    finally:
        ray.close()
    load = os.getloadavg()
    print(json.dumps({"ray_cluster_start_s": round(startup, 1), "loadavg": load, "rows": rows}))


if __name__ == "__main__":
    main()
