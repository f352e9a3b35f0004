"""The dashboard as a reader of run directories: Host check against DNS rebinding (issue 11 §6)
on a real ``skillgrad dashboard`` server, and a run list that re-reads only changed runs (§5)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from fixtures_runs import append_step, build_run
from skillgrad.dashboard import create_app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(port: int, host_header: str, path: str = "/api/runs") -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host_header)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _serve(root: Path, *extra: str) -> Iterator[int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillgrad", "dashboard", str(root), "--port", str(port), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "dashboard did not start"
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("dashboard")
    build_run(root, "demo")
    yield from _serve(root)


@pytest.mark.slow
@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io", ""])
def test_foreign_host_header_is_refused(served: int, host: str) -> None:
    """A page on evil.example whose name was rebound to 127.0.0.1 must not read the runs."""
    status, body = _get(served, host.format(port=served))
    assert status == 400
    assert "demo" not in body and "is not served here" in body


@pytest.mark.slow
@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}"]
)
def test_loopback_host_names_are_served(served: int, host: str) -> None:
    status, body = _get(served, host.format(port=served))
    assert status == 200, body
    assert [r["name"] for r in json.loads(body)] == ["demo"]


@pytest.mark.slow
def test_allow_remote_serves_any_host_name(tmp_path: Path) -> None:
    build_run(tmp_path, "demo")
    for port in _serve(tmp_path, "--allow-remote"):
        status, _ = _get(port, f"dashboard.example.org:{port}")
        assert status == 200


def test_run_list_rereads_only_runs_whose_files_changed(tmp_path: Path) -> None:
    finished = build_run(tmp_path, "done")
    live = build_run(tmp_path, "live", n_steps=2, finished=False)
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1")
    first = {r["name"]: r for r in client.get("/api/runs").json()}
    assert first["done"]["status"] == "finished" and first["live"]["steps"] == 2

    # Rewrite the finished run's summary in place with the same size and mtime: a reader that
    # re-read it would now show another status; the cached run list does not read it again.
    summary = finished / "summary.json"
    st = summary.stat()
    text = summary.read_text()
    summary.write_text(text.replace('"finished"', '"FINISHED"'))
    os.utime(summary, ns=(st.st_atime_ns, st.st_mtime_ns))
    append_step(live, val_score=0.9)  # the live run grows: it is re-read

    second = {r["name"]: r for r in client.get("/api/runs").json()}
    assert second["done"]["status"] == "finished"  # not re-read
    assert second["live"]["steps"] == 3  # re-read

    summary.write_text(text.replace('"finished"', '"early_stopped"'))  # size changes
    third = {r["name"]: r for r in client.get("/api/runs").json()}
    assert third["done"]["status"] == "early_stopped"
