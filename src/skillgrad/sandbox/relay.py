"""Network to ONE endpoint for a box that has no network: the parent's half of the relay.

``EndpointRelay(host, port)`` listens on a unix socket in a private folder and forwards each
connection to ``host:port`` over TCP (or TLS: ``tls=True`` checks the system's certificates, or
pass an ``ssl.SSLContext``), and nowhere else.
A box started with ``run_in_box(..., endpoint=relay, endpoint_port=P)`` sees that socket and a
relay (``inbox/relay.py``) that listens on ``127.0.0.1:P`` inside the box; the command inside
talks plain HTTP to ``http://127.0.0.1:P``. The box keeps ``--unshare-net``: no other address,
no DNS, no host loopback.

What it does not do: it forwards bytes, it does not read HTTP. The ``Host`` header the command
sends is ``127.0.0.1:P`` (endpoints behind name-based routing may need a rewrite), and any API
key the command needs must be given to it (its environment), so the command can read that key.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import tempfile
import threading
from pathlib import Path
from types import TracebackType

from skillgrad.sandbox.inbox.relay import splice


class EndpointRelay:
    """Forward connections on a unix socket to one TCP endpoint (see the module docstring)."""

    def __init__(
        self, host: str, port: int, *, tls: bool | ssl.SSLContext = False, timeout_s: float = 30.0
    ) -> None:
        self.host, self.port, self.tls, self.timeout_s = host, port, tls, timeout_s
        tmp = tempfile.gettempdir()
        if os.geteuid() == 0 and not os.stat(tmp).st_mode & 0o001:
            tmp = "/tmp"  # the box's unprivileged uid must reach the socket
        self._dir = Path(tempfile.mkdtemp(prefix="skillgrad-relay-", dir=tmp))
        self._dir.chmod(0o711)
        self.socket_path = self._dir / "endpoint.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o666)  # the box runs as another, unprivileged uid
        self._listener.listen(64)
        self._closed = threading.Event()
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _upstream(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        sock.settimeout(None)
        if self.tls is False:
            return sock
        context = self.tls if isinstance(self.tls, ssl.SSLContext) else ssl.create_default_context()
        return context.wrap_socket(sock, server_hostname=self.host)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        try:
            upstream = self._upstream()
        except OSError:
            client.close()
            return
        splice(client, upstream)

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> EndpointRelay:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["EndpointRelay"]
