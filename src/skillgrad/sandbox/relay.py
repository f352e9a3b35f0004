"""Network to ONE endpoint for a box that has no network: the parent's half of the relay.

``EndpointRelay(host, port)`` listens on a unix socket in a private folder and forwards each
connection to ``host:port`` over TCP (or TLS: ``tls=True`` checks the system's certificates, or
pass an ``ssl.SSLContext``), and nowhere else.
A box started with ``run_in_box(..., endpoint=relay, endpoint_port=P)`` sees that socket and a
relay (``inbox/relay.py``) that listens on ``127.0.0.1:P`` inside the box; the command inside
talks plain HTTP to ``http://127.0.0.1:P``. The box keeps ``--unshare-net``: no other address,
no DNS, no host loopback.

Every connection is served by one asyncio event loop on one thread. An ``ssl.SSLSocket`` must
not be read by one thread while another writes it (OpenSSL's SSL objects are not thread-safe:
when TLS 1.3 session tickets arrive during a write, the two threads steal each other's bytes and
the exchange hangs, about one connection in a hundred; that was the timeout of
``test_the_relay_speaks_tls_to_an_https_endpoint`` in full-suite runs), and asyncio's TLS runs
reads and writes of one connection on one thread.

What it does not do: it forwards bytes, it does not read HTTP. The ``Host`` header the command
sends is ``127.0.0.1:P`` (endpoints behind name-based routing may need a rewrite), and any API
key the command needs must be given to it (its environment), so the command can read that key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import ssl
import tempfile
import threading
from asyncio import StreamReader, StreamWriter
from pathlib import Path
from types import TracebackType

_CHUNK = 65536


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
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o666)  # the box runs as another, unprivileged uid
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._serving = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(listener,), daemon=True)
        self._thread.start()
        self._serving.wait()

    def _context(self) -> ssl.SSLContext | None:
        if self.tls is False:
            return None
        return self.tls if isinstance(self.tls, ssl.SSLContext) else ssl.create_default_context()

    def _run(self, listener: socket.socket) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            start = asyncio.start_unix_server(self._forward, sock=listener, backlog=64)
            server = loop.run_until_complete(start)
        finally:
            self._serving.set()
        loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()

    async def _forward(self, client_r: StreamReader, client_w: StreamWriter) -> None:
        self.connections += 1
        context = self._context()
        try:
            up_r, up_w = await asyncio.wait_for(
                asyncio.open_connection(
                    self.host, self.port, ssl=context,
                    server_hostname=self.host if context else None,
                ),
                self.timeout_s,
            )  # fmt: skip
        except (OSError, TimeoutError):
            client_w.close()
            return
        try:
            sending = asyncio.ensure_future(_copy(client_r, up_w))
            await _copy(up_r, client_w)  # the endpoint's side ending ends the exchange
            await sending
        finally:
            for writer in (client_w, up_w):
                writer.close()

    def close(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> EndpointRelay:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


async def _copy(reader: StreamReader, writer: StreamWriter) -> None:
    """Copy until ``reader`` ends or fails, then half-close ``writer`` where it can be (a TLS
    stream cannot: the endpoint sees the end when the connection closes)."""
    with contextlib.suppress(OSError, ssl.SSLError):
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


__all__ = ["EndpointRelay"]
