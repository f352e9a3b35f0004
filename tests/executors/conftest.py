"""The executor tests' Ray cluster: real, local, 127.0.0.1 only, one per test module that asks
for it (helpers live in ``executor_helpers.py``: a ``conftest`` import would be ambiguous when
several test folders run together)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from executor_helpers import AGENT_KEY

from skillgrad.executors import connect, import_ray


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A private Ray cluster on 127.0.0.1 with 2 CPUs, this process its driver; its address.
    Set before it starts (its workers inherit this environment): the agent endpoint's key."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AGENT_KEY", AGENT_KEY)
        ray = import_ray()
        connect(ray, None, workers=2)
        try:
            address = str(ray.get_runtime_context().gcs_address)
            assert address.startswith("127.0.0.1:")  # loopback only
            yield address
        finally:
            ray.shutdown()
