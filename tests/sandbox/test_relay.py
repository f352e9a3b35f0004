"""A box with no network reaches exactly one endpoint through the relay, and nothing else."""

from __future__ import annotations

import contextlib
import http.server
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillgrad.sandbox import EndpointRelay, Limits, run_in_box

pytestmark = pytest.mark.slow


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from the endpoint, you asked {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve() -> tuple[http.server.ThreadingHTTPServer, int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.fixture
def two_servers() -> Iterator[tuple[int, int]]:
    allowed, allowed_port = _serve()
    other, other_port = _serve()
    yield allowed_port, other_port
    for server in (allowed, other):
        server.shutdown()
        server.server_close()  # shutdown() alone leaves the port listening


def test_the_one_endpoint_is_reachable_and_nothing_else(two_servers: tuple[int, int]) -> None:
    allowed_port, other_port = two_servers
    probe = (
        "import urllib.request, socket\n"
        "reply = urllib.request.urlopen('http://127.0.0.1:9000/v1/models', timeout=5)\n"
        "print(reply.read().decode())\n"
        f"for port in ({allowed_port}, {other_port}):\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=2)\n"
        "        print('reached', port)\n"
        "    except OSError as exc:\n"
        "        print('blocked', port, exc.strerror)\n"
        "try:\n"
        "    socket.getaddrinfo('pypi.org', 443)\n"
        "    print('resolved')\n"
        "except OSError:\n"
        "    print('no dns')\n"
    )
    with EndpointRelay("127.0.0.1", allowed_port) as relay:
        out = run_in_box(
            ["/usr/bin/python3", "-c", probe], limits=Limits(timeout_s=20),
            endpoint=relay, endpoint_port=9000,
        )  # fmt: skip
        assert relay.connections == 1
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "hello from the endpoint, you asked /v1/models"
    assert lines[1].startswith(f"blocked {allowed_port}") and lines[2].startswith(
        f"blocked {other_port}"
    )
    assert lines[3] == "no dns"
    assert out.isolation == "bubblewrap+net-endpoint-only+rlimits"


def test_without_a_relay_the_box_has_no_network(two_servers: tuple[int, int]) -> None:
    allowed_port, _ = two_servers
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {allowed_port}), timeout=2)\n"
    out = run_in_box(["/usr/bin/python3", "-c", code], limits=Limits(timeout_s=20))
    assert out.returncode == 1 and "Connection refused" in out.stderr
    with socket.create_connection(("127.0.0.1", allowed_port), timeout=2):
        pass  # control: the server is up on the host


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[tuple[int, ssl.SSLContext]]:
    """A TLS endpoint on 127.0.0.1 with its own certificate, and a context that trusts it."""
    if not shutil.which("openssl"):
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
         "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    server.socket = served.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], ssl.create_default_context(cafile=str(cert))
    finally:
        server.shutdown()
        server.server_close()


def test_the_relay_speaks_tls_to_an_https_endpoint(
    https_server: tuple[int, ssl.SSLContext],
) -> None:
    port, trusting = https_server
    probe = "import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:9000/tls').read().decode())\n"
    with EndpointRelay("127.0.0.1", port, tls=trusting) as relay:
        out = run_in_box(
            ["/usr/bin/python3", "-c", probe], limits=Limits(timeout_s=20),
            endpoint=relay, endpoint_port=9000,
        )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello from the endpoint, you asked /tls"


def test_every_tls_exchange_through_the_relay_completes(
    https_server: tuple[int, ssl.SSLContext],
) -> None:
    """The cause of that test's rare timeout: the relay read the TLS socket on one thread while
    another wrote it, and OpenSSL's objects are not thread-safe (with TLS 1.3 session tickets
    arriving during the write, about 1 exchange in 100 hung). 500 exchanges, none may hang."""
    port, trusting = https_server
    with EndpointRelay("127.0.0.1", port, tls=trusting) as relay:
        for n in range(500):
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(5)
                sock.connect(str(relay.socket_path))
                sock.sendall(f"GET /{n} HTTP/1.0\r\n\r\n".encode())
                reply = b""
                with contextlib.suppress(TimeoutError):
                    while chunk := sock.recv(4096):
                        reply += chunk
            assert reply.endswith(f"you asked /{n}".encode()), f"exchange {n} hung: {reply!r}"
        assert relay.connections == 500
