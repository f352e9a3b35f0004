"""``skillgrad sweep --executor ray`` on a real local Ray cluster (127.0.0.1 only; one cluster for
this module, started here, which the sweep command attaches to with --ray-address): the sweep
finishes, a SIGKILLed Ray worker is resumed by re-running the command, nothing is paid twice."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sweep_helpers import (
    KILLED_RUN,
    assert_nothing_paid_twice,
    calls,
    comparable_summary,
    kill_one_run_then_resume,
    uninterrupted,
)

from skillgrad.executors import connect, import_ray

Reference = tuple[list[dict[str, object]], Counter[str]]


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    ray = import_ray()
    connect(ray, None, workers=2)
    try:
        address = str(ray.get_runtime_context().gcs_address)
        assert address.startswith("127.0.0.1:")  # loopback only
        yield address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def reference(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    folder = tmp_path_factory.mktemp("ray-ref")
    return uninterrupted(folder, "--executor", "ray", "--ray-address", cluster, "--workers", "2")


@pytest.mark.slow
def test_ray_sweep_summary(reference: Reference) -> None:
    summary, paid = reference
    constant, cosine = summary
    assert constant["runs_finished"] == cosine["runs_finished"] == 2
    assert cosine["test_gain"]["values"] == [1.0, 1.0]  # type: ignore[index]
    assert paid


@pytest.mark.slow
def test_killed_ray_worker_then_rerun_finishes_without_paying_twice(
    tmp_path: Path, cluster: str, reference: Reference
) -> None:
    summary, paid = reference
    first_err, again_err = kill_one_run_then_resume(
        tmp_path, "--executor", "ray", "--ray-address", cluster, "--workers", "2"
    )
    assert f"{KILLED_RUN} failed" in first_err and "ray task failed" in first_err, first_err
    assert again_err.count(" skipped") == 3
    assert comparable_summary(tmp_path / "sweep") == summary
    assert_nothing_paid_twice(calls(tmp_path), paid)
