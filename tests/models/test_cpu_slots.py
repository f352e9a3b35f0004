"""CPU slots: never more threads at once than cores, across threads and processes; no deadlock;
a killed holder frees its slots; the embedded backend computes only while holding them."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from skillgrad.models.cpu_slots import CpuSlots, available_cores, slots_dir

HOLDER = """
import sys, time
from pathlib import Path
from skillgrad.models.cpu_slots import CpuSlots
slots = CpuSlots(cores=int(sys.argv[2]), directory=Path(sys.argv[1]))
with slots.hold(int(sys.argv[3])):
    print("held", flush=True)
    time.sleep(float(sys.argv[4]))
"""


def _holder(directory: Path, cores: int, n: int, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory), str(cores), str(n), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_defaults_follow_the_affinity_mask_and_a_per_user_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    assert available_cores() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert slots_dir() == tmp_path / "skillgrad" / "cpu"
    slots = CpuSlots()
    assert slots.cores == available_cores() and slots.directory.stat().st_mode & 0o777 == 0o700
    with slots.hold(10_000) as n:
        assert n == slots.cores  # never more slots than cores


def test_threads_never_hold_more_than_the_cores(tmp_path: Path) -> None:
    slots = CpuSlots(cores=3, directory=tmp_path)
    in_use, peak, lock = [0], [0], threading.Lock()
    rng = random.Random(0)
    wants = [rng.randint(1, 3) for _ in range(60)]

    def work(n: int) -> None:
        with slots.hold(n) as got:
            with lock:
                in_use[0] += got
                peak[0] = max(peak[0], in_use[0])
            time.sleep(0.002)
            with lock:
                in_use[0] -= got

    threads = [threading.Thread(target=work, args=(n,)) for n in wants]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "deadlock: some holders never got their slots"
    assert peak[0] <= 3 and in_use[0] == 0
    assert peak[0] >= 2  # they did run side by side when slots allowed it


def test_another_process_holding_every_slot_makes_us_wait(tmp_path: Path) -> None:
    proc = _holder(tmp_path, 2, 2, 1.0)
    start = time.monotonic()
    with CpuSlots(cores=2, directory=tmp_path).hold(1):
        waited = time.monotonic() - start
    proc.wait(timeout=30)
    assert waited > 0.5


def test_one_slot_each_lets_two_processes_compute_at_once(tmp_path: Path) -> None:
    proc = _holder(tmp_path, 2, 1, 1.0)
    start = time.monotonic()
    with CpuSlots(cores=2, directory=tmp_path).hold(1):
        waited = time.monotonic() - start
    proc.wait(timeout=30)
    assert waited < 0.3


def test_a_killed_holder_frees_its_slots(tmp_path: Path) -> None:
    proc = _holder(tmp_path, 2, 2, 60.0)
    proc.kill()
    proc.wait(timeout=30)
    start = time.monotonic()
    with CpuSlots(cores=2, directory=tmp_path).hold(2):
        assert time.monotonic() - start < 1.0


@pytest.mark.slow
def test_the_embedded_backend_computes_only_while_holding_its_slots(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="pip install 'skillgrad[local]'")
    from skillgrad.models.llamacpp import LlamaCppBackend
    from skillgrad.models.spec import ModelSpec
    from skillgrad.types import ChatRequest, Message

    slots = CpuSlots(cores=2, directory=tmp_path)
    backend = LlamaCppBackend(ModelSpec(n_threads=2), slots=slots)
    assert backend.threads == 2
    request = ChatRequest((Message("user", "Say hi"),), max_tokens=4)
    proc = _holder(tmp_path, 2, 1, 1.5)  # one core busy elsewhere: a 2-thread call must wait
    start = time.monotonic()
    out = asyncio.run(backend.complete(request))
    proc.wait(timeout=30)
    assert out.usage.completion_tokens > 0 and time.monotonic() - start > 1.0
