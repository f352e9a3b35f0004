"""A boxed agent reaches its endpoint and nothing else: http through the relay, https through
the relay and a CONNECT proxy that tunnels only to the endpoint (TLS stays end to end)."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from agent_script import follow_skill
from test_harness_real_cli import bundle, write_splits
from tests.servers.agent_llm import serve_agent

from skillgrad.harnesses.claude_code import claude_code
from skillgrad.harnesses.proxy import ConnectProxy
from skillgrad.skill.package import SkillPackage
from skillgrad.tasks.harness import HarnessTask
from skillgrad.testing import FunctionBackend


@contextmanager
def echo_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 answering each connection's first bytes with ``echo:`` + them."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"echo:" + conn.recv(1024))

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def connect_via(proxy_port: int, target: str, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", proxy_port), timeout=10) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = sock.recv(1024)
        if b" 200 " not in head:
            return head
        sock.sendall(payload)
        return sock.recv(1024)


def test_connect_proxy_tunnels_only_to_its_target() -> None:
    with echo_server() as port, echo_server() as other, ConnectProxy("127.0.0.1", port) as proxy:
        assert connect_via(proxy.port, f"127.0.0.1:{port}", b"hi") == b"echo:hi"
        assert b"403" in connect_via(proxy.port, f"127.0.0.1:{other}", b"hi")
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            sock.sendall(b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
            assert b"405" in sock.recv(1024)
        assert len(proxy.refused) == 2


AGENT = """
import os, socket, sys
proxy = os.environ["HTTPS_PROXY"].removeprefix("http://")
host, port = proxy.split(":")
def tunnel(target):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n".encode())
    head = s.recv(1024)
    if b" 200 " not in head:
        return head.split(b"\\r\\n")[0].decode()
    s.sendall(b"ping")
    return s.recv(1024).decode()
endpoint = sys.argv[1].removeprefix("https://")
print(tunnel(endpoint), "|", tunnel("203.0.113.9:443"))
"""


async def test_boxed_agent_reaches_an_https_endpoint_only_through_the_proxy(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "val", "test"):
        row = {"id": f"{split}-0", "prompt": "go", "check": {"final": True, "contains": "echo"}}
        (data / f"{split}.jsonl").write_text(json.dumps(row) + "\n")
    skill = SkillPackage.from_files({"SKILL.md": "---\nname: s\ndescription: d\n---\nx\n"})
    with echo_server() as port:
        task = HarnessTask(
            harness={"argv": ["/usr/bin/python3", "-c", AGENT, "{base_url}"], "output": "text"},
            endpoint={"base_url": f"https://127.0.0.1:{port}"},
            split_dir=str(data),
            timeout_s=60,
        )  # fmt: skip
        item = task.load_split("val")[0]
        traj = await task.rollout(item, skill.bundle(), FunctionBackend(str))
    assert traj.output == "echo:ping | HTTP/1.1 403 Forbidden", traj.steps
    assert traj.score.passed


def self_signed(folder: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 (openssl CLI), as (cert file, key file)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


async def test_claude_code_in_the_box_reaches_an_https_endpoint_end_to_end(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TLS from the agent itself, through the relay and the CONNECT proxy: the server sees the
    endpoint's own Host header, and the agent trusts the endpoint's certificate."""
    monkeypatch.setenv("AGENT_TEST_KEY", "sk-test")
    cert, key = self_signed(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    write_splits(data)
    harness = claude_code(str(claude_bin)).model_dump()
    harness["name"] = "claude-code-private-ca"
    harness["config_files"] = {"{home}/ca.pem": Path(cert).read_text()}
    harness["env"]["NODE_EXTRA_CA_CERTS"] = "{home}/ca.pem"
    with serve_agent(follow_skill("answer-word"), tls=(cert, key)) as server:
        endpoint = {"base_url": server.url, "model": "m", "api_key_env": "AGENT_TEST_KEY"}
        task = HarnessTask(harness=harness, endpoint=endpoint, split_dir=str(data), timeout_s=60)
        traj = await task.rollout(task.load_split("val")[0], bundle(), FunctionBackend(str))
    assert server.url.startswith("https://")
    host = server.url.removeprefix("https://")
    assert server.requests and all(r.headers["host"] == host for r in server.requests)
    assert traj.score.passed, (traj.error, traj.score.feedback)
    exit_step = next(s for s in traj.steps if s["type"] == "agent_exit")
    assert exit_step["isolation"].startswith("bubblewrap+net-endpoint-only")
