"""One run directory, one writer (issue 11 §2), with real ``skillgrad train`` subprocesses.

Reproduced before the lock: two trains on one run directory both exited 0, paid calls twice and
interleaved events.jsonl and patch_log.jsonl.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from rundir_helpers import (
    assert_clean_refusal,
    events,
    hold,
    start_train,
    train,
    wait_for_event,
    write_config,
)

from skillgrad.errors import RunDirError
from skillgrad.runs.lock import LOCK_NAME, Holder, RunLock, process_start_time

pytestmark = pytest.mark.slow


def _lock_record(run: Path, **fields: object) -> None:
    run.mkdir(parents=True, exist_ok=True)
    me = Holder.me().__dict__
    (run / LOCK_NAME).write_text(json.dumps({**me, **fields}))


def test_second_writer_refuses_and_the_first_finishes_alone(tmp_path: Path) -> None:
    config = write_config(tmp_path, hold_from_step=1)
    run = tmp_path / "runs/run"
    with hold(tmp_path) as held:
        first = start_train(config, tmp_path / "first.log")
        try:
            held.reached()  # the first writer is inside step 1
            second = train(config, tmp_path / "second.log")
            assert first.poll() is None  # the second writer came while the first was writing
        except BaseException:
            first.kill()
            raise
    _, err = first.communicate(timeout=300)
    assert_clean_refusal(second, f"pid {first.pid}", "one run directory has one writer")
    assert first.returncode == 0, err
    assert not (tmp_path / "second.log").exists()  # the refused run paid nothing
    paid = Counter((tmp_path / "first.log").read_text().splitlines())
    assert max(paid.values()) == 1  # no call paid twice
    starts = [e for e in events(run) if e["event"] == "run_start"]
    assert len(starts) == 1  # events.jsonl holds one process's story
    assert not (run / LOCK_NAME).exists()  # released on exit
    again = train(config)  # and the finished run can be re-opened (resumed) afterwards
    assert again.returncode == 0, again.stderr


def test_lock_of_a_sigkilled_run_is_taken_over(tmp_path: Path) -> None:
    config = write_config(tmp_path, latency=0.03)
    run = tmp_path / "runs/run"
    victim = start_train(config)
    wait_for_event(run, "step_start")
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    left = Holder.parse((run / LOCK_NAME).read_text())
    assert left is not None and left.pid == victim.pid  # the killed run's lock is still there
    resumed = train(config)
    assert resumed.returncode == 0, resumed.stderr
    taken = [e for e in events(run) if e["event"] == "lock_taken_over"]
    assert [e["previous"]["pid"] for e in taken] == [victim.pid]


def test_a_reused_pid_with_another_start_time_is_a_stale_lock(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    run = tmp_path / "runs/run"
    start = process_start_time(os.getpid())
    assert start is not None
    # this test process is alive: only its start time tells the record is not about it
    _lock_record(run, pid=os.getpid(), start_time=start - 100)
    done = train(config)
    assert done.returncode == 0, done.stderr
    assert any(e["event"] == "lock_taken_over" for e in events(run))


def test_a_killed_holder_not_yet_reaped_is_a_stale_lock(tmp_path: Path) -> None:
    """A zombie (dead, its parent has not reaped it: an orphan killed with its sweep waits for
    init) holds nothing: its lock is taken over, not refused as a live writer."""
    config = write_config(tmp_path)
    run = tmp_path / "runs/run"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{dead.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)  # not reaped (no wait yet): a zombie
        _lock_record(run, pid=dead.pid, start_time=process_start_time(dead.pid))
        done = train(config)
    finally:
        dead.wait()
    assert done.returncode == 0, done.stderr
    taken = [e for e in events(run) if e["event"] == "lock_taken_over"]
    assert [e["previous"]["pid"] for e in taken] == [dead.pid]


def test_a_live_holder_is_refused_even_without_its_flock(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    run = tmp_path / "runs/run"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lock_record(run, pid=holder.pid, start_time=process_start_time(holder.pid))
        refused = train(config)
    finally:
        holder.kill()
        holder.wait()
    assert_clean_refusal(refused, f"pid {holder.pid}", socket.gethostname())
    assert not (run / "config.json").exists()  # nothing was written


def test_a_holder_on_another_host_is_refused_with_how_to_recover(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    run = tmp_path / "runs/run"
    _lock_record(run, pid=4242, host="gpu-box-7", start_time=None)
    refused = train(config)
    assert_clean_refusal(refused, "gpu-box-7", f"delete {run / LOCK_NAME}")
    (run / LOCK_NAME).unlink()  # the documented recovery
    assert train(config).returncode == 0


def test_readers_work_while_a_run_holds_the_lock(tmp_path: Path) -> None:
    config = write_config(tmp_path, hold_from_step=2)
    run = tmp_path / "runs/run"
    held = hold(tmp_path).__enter__()
    writer = start_train(config)
    try:
        held.reached()  # step 1 is written, the writer waits inside step 2
        lock_before = (run / LOCK_NAME).read_text()
        for cmd, code in ((["diff", str(run), "--to", "1"], 0), (["blame", str(run)], 0),
                          (["report", str(run)], 2)):  # fmt: skip
            # report prints finished runs only: during the run it says so, cleanly
            proc = subprocess.run(
                [sys.executable, "-m", "skillgrad", *cmd], capture_output=True, text=True
            )
            assert proc.returncode == code, (cmd, proc.stderr)
            assert "Traceback" not in proc.stderr
        from skillgrad.dashboard import data
        from skillgrad.runs.view import load_run

        assert data.run_overview(load_run(run))["steps"] >= 1
        assert (run / LOCK_NAME).read_text() == lock_before  # readers never touch the lock
        assert writer.poll() is None  # all of this happened while the run was writing
    finally:
        held.__exit__()
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    report = subprocess.run(
        [sys.executable, "-m", "skillgrad", "report", str(run)], capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr


def test_two_writers_in_one_process_are_refused(tmp_path: Path) -> None:
    first = RunLock.acquire(tmp_path)
    with pytest.raises(RunDirError, match=f"pid {os.getpid()}"):
        RunLock.acquire(tmp_path)
    first.release()
    RunLock.acquire(tmp_path).release()  # released: the next writer gets it


def test_an_unwritable_place_for_the_run_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the runs folder should be")
    with pytest.raises(RunDirError, match="cannot create or lock the run directory"):
        RunLock.acquire(blocker / "run")
