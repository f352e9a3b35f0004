"""Sweep throughput: N runs on W workers against ceil(N / W) single runs, local pool and Ray.

Each run is the toy task with the fake models of ``tests/fakes_e2e.py`` (every model call sleeps
``--latency`` seconds), so a run's time is dominated by model latency, as with a remote API.
A single run is timed through the same executor (one job, one worker: process start included);
then N runs (``--seeds N``, one grid configuration) on W workers. The target is
``sweep <= 1.15 x ceil(N / W) x single``. For Ray the local cluster (127.0.0.1) is started once
before timing and attached to, as ``--ray-address`` does; its start-up is reported separately.

    .venv/bin/python bench/bench_sweep.py --runs 8 --workers 4 --latency 0.15 --executor local ray
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from skillgrad.sweep.plan import build_plan
from skillgrad.sweep.run import make_pool, run_sweep

FAKES = Path(__file__).resolve().parents[1] / "tests" / "fakes_e2e.py"


def write_config(folder: Path, latency: float) -> Path:
    opts = f"{{latency: {latency}}}"
    text = f"""
train: {{num_epochs: 2, batch_size: 4, patience: 5, learning_rate: 4, min_learning_rate: 1,
        lr_decay_on_reject: 0.5, minibatch_size: 2}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer", options: {opts}}}
  target: {{provider: function, model: "{FAKES}:FakeTarget", options: {opts}}}
env: {{task: toy, options: {{n_train: 8, n_val: 6, n_test: 4}}}}
hardware: {{rollout_workers: 2, analyst_workers: 2}}
"""
    path = folder / "config.yaml"
    path.write_text(text)
    return path


def timed_sweep(
    config: Path, out: Path, runs: int, workers: int, executor: str, address: str | None
) -> tuple[float, list[float]]:
    plan = build_plan(config, seeds=runs, out=out)
    start = time.monotonic()
    result = run_sweep(plan, make_pool(executor, workers, address))
    wall = time.monotonic() - start
    if result.failed:
        raise SystemExit(f"runs failed: {[(o.name, o.error) for o in result.failed]}")
    return wall, sorted(o.seconds for o in result.outcomes)


def bench(executor: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    address, startup = None, 0.0
    if executor == "ray":
        from skillgrad.executors import connect, import_ray

        ray = import_ray()
        t0 = time.monotonic()
        connect(ray, None, args.workers)
        startup = time.monotonic() - t0
        address = str(ray.get_runtime_context().gcs_address)
    try:
        config = write_config(folder, args.latency)
        single, _ = timed_sweep(config, folder / f"{executor}-single", 1, 1, executor, address)
        wall, per_run = timed_sweep(
            config, folder / f"{executor}-sweep", args.runs, args.workers, executor, address
        )
    finally:
        if executor == "ray":
            ray.shutdown()
    rounds = math.ceil(args.runs / args.workers)
    return {
        "executor": executor,
        "runs": args.runs,
        "workers": args.workers,
        "latency_s": args.latency,
        "single_run_s": round(single, 2),
        "sweep_s": round(wall, 2),
        "ideal_s": round(rounds * single, 2),
        "ratio": round(wall / (rounds * single), 3),
        "target_ratio": 1.15,
        "per_run_s": [round(s, 2) for s in per_run],
        "cluster_start_s": round(startup, 2),
        "load_avg_1m_after": round(os.getloadavg()[0], 2),  # the machine's load while measuring
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.15)
    parser.add_argument("--executor", nargs="+", default=["local", "ray"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for executor in args.executor:
            folder = Path(tmp) / executor
            folder.mkdir()
            print(json.dumps(bench(executor, args, folder)), flush=True)


if __name__ == "__main__":
    main()
