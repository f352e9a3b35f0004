"""A CONNECT proxy on the host's loopback that opens tunnels to ONE host:port and nothing else.

Why: a boxed agent reaches the outside only through the sandbox's ``EndpointRelay``, which
forwards bytes to one TCP address. For an ``https`` endpoint the agent must speak TLS itself
(right SNI, right ``Host`` header, certificate checked), so the relay leads to this proxy and
the agent is given ``HTTPS_PROXY``: it sends ``CONNECT api.example.com:443``, the proxy checks
that this is the configured endpoint, and then only pumps the encrypted bytes. Any other target
or method is refused (403 / 405) and the connection closed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

from skillgrad.sandbox.inbox.relay import splice

_MAX_HEAD = 16 * 1024


class ConnectProxy:
    """``ConnectProxy(host, port)``: listens on ``127.0.0.1:self.port``; tunnels to host:port."""

    def __init__(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        self.target = f"{host.lower()}:{port}"
        self.host, self.port_to, self.timeout_s = host, port, timeout_s
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.refused: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        client.settimeout(self.timeout_s)
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
                chunk = client.recv(4096)
                if not chunk:
                    return client.close()
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split()
            if len(parts) != 3 or parts[0].upper() != "CONNECT":
                self.refused.append(line)
                return self._reply(client, b"405 Method Not Allowed")
            if parts[1].lower() != self.target:
                self.refused.append(line)
                return self._reply(client, b"403 Forbidden")
            upstream = socket.create_connection((self.host, self.port_to), self.timeout_s)
        except OSError:
            return self._reply(client, b"502 Bad Gateway")
        client.settimeout(None)
        upstream.settimeout(None)
        client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            upstream.sendall(rest)
        splice(client, upstream)

    @staticmethod
    def _reply(client: socket.socket, status: bytes) -> None:
        with contextlib.suppress(OSError):
            client.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
        client.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ConnectProxy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["ConnectProxy"]
