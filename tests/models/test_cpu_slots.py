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

from skillgrad.models.wrappers.cpu_slots import CpuSlots, available_cores, busy_elsewhere, slots_dir

HOLDER = """
import sys, time
from pathlib import Path
from skillgrad.models.wrappers.cpu_slots import CpuSlots
slots = CpuSlots(cores=int(sys.argv[2]), directory=Path(sys.argv[1]))
with slots.hold(int(sys.argv[3]), exact=True):
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
    with slots.hold(10_000, exact=True) as n:
        assert n == slots.cores  # never more slots than cores


def test_threads_never_hold_more_than_the_cores(tmp_path: Path) -> None:
    slots = CpuSlots(cores=3, directory=tmp_path)
    in_use, peak, lock = [0], [0], threading.Lock()
    rng = random.Random(0)
    wants = [rng.randint(1, 3) for _ in range(60)]

    def work(n: int) -> None:
        with slots.hold(n, exact=n % 2 == 0) as got:  # exact and free holders mixed
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


def test_a_free_holder_takes_what_is_left_and_an_exact_one_waits(tmp_path: Path) -> None:
    proc = _holder(tmp_path, 2, 1, 1.0)  # another process computes on one core
    slots = CpuSlots(cores=2, directory=tmp_path)
    start = time.monotonic()
    with slots.hold(2) as got:  # the default: the free core, at once
        assert got == 1 and time.monotonic() - start < 0.3
    with slots.hold(2, exact=True) as got:  # an explicit n_threads=2 waits for both
        assert got == 2 and time.monotonic() - start > 0.5
    proc.wait(timeout=30)


def test_cores_busy_with_other_programs_are_left_to_them(tmp_path: Path) -> None:
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        assert busy_elsewhere() >= 1  # a spinning program is always runnable
        with CpuSlots(cores=2, directory=tmp_path).hold(2) as got:
            assert got <= 2 - min(busy_elsewhere(), 1)
    finally:
        spin.kill()
        spin.wait()


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
    request = ChatRequest((Message("user", "Say hi"),), max_tokens=4)
    exact = LlamaCppBackend(ModelSpec(n_threads=2), slots=slots)
    assert exact.threads == 2
    proc = _holder(tmp_path, 2, 1, 1.5)  # one core held elsewhere: n_threads=2 must wait
    start = time.monotonic()
    out = asyncio.run(exact.complete(request))
    proc.wait(timeout=30)
    assert out.usage.completion_tokens > 0 and time.monotonic() - start > 1.0
    free = LlamaCppBackend(ModelSpec(), slots=slots)  # default: runs on the free core
    proc = _holder(tmp_path, 2, 1, 30.0)
    try:
        start = time.monotonic()
        assert asyncio.run(free.complete(request)).usage.completion_tokens > 0
        assert time.monotonic() - start < 25  # it did not wait for the held core
    finally:
        proc.kill()
        proc.wait()
