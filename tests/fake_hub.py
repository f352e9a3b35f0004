"""A Hugging Face-compatible file server on 127.0.0.1 (stdlib http.server in a thread).

Serves ``GET /{owner}/{repo}/resolve/{revision}/{file}`` as the hub does: a 302 redirect to a
CDN path (like the hub's LFS redirect), then the bytes, with HTTP ``Range`` support (206 and
``Content-Range``). Injectable misbehaviour: cut a response after N bytes (the connection closes
mid-body), ignore ``Range``, a slow link, redirect in a loop, send a body labelled
``Content-Encoding: gzip`` that is not gzip; every request is recorded (path, Range header).
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-$")


class _QuietServer(ThreadingHTTPServer):
    """A client that drops a cut or slow download resets the connection on purpose."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class FakeHub:
    files: dict[tuple[str, str, str], bytes] = field(default_factory=dict)
    """(repo, revision, filename) -> content."""
    cut_after: list[int] = field(default_factory=list)
    """For the next responses, in order: close the connection after this many body bytes."""
    ignore_range: bool = False
    pace_s: float = 0.0
    """Pause this long after every 16 kB of body (a slow link, to interrupt a pull mid-way)."""
    redirect_loop: bool = False
    """Answer every request with a redirect to itself (after the first hop, as a CDN would)."""
    content_range_total: str | None = None
    """Write this as the total of a 206 answer's ``Content-Range`` instead of the real size."""
    fake_gzip: bool = False
    """Send the file's bytes labelled ``Content-Encoding: gzip`` (not gzip: undecodable)."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, repo: str, filename: str, content: bytes, revision: str = "main") -> None:
        self.files[(repo, revision, filename)] = content

    def start(self) -> FakeHub:
        handler = type("Handler", (_Handler,), {"hub": self})
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@contextmanager
def serve_hub() -> Iterator[FakeHub]:
    hub = FakeHub().start()
    try:
        yield hub
    finally:
        hub.stop()


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.hub.requests.append({"path": self.path, "range": self.headers.get("Range")})
        if self.hub.redirect_loop and self.path.startswith("/cdn/"):
            return self._redirect(self.path)
        if self.path.startswith("/cdn/"):
            owner, repo, revision, name = (unquote(p) for p in self.path[5:].split("/", 3))
            return self._send_file(self.hub.files.get((f"{owner}/{repo}", revision, name)))
        match = _RESOLVE.match(self.path)
        if not match or tuple(unquote(g) for g in match.groups()) not in self.hub.files:
            return self._plain(404, b"Entry not found")
        repo, revision, name = match.groups()
        self._redirect(f"/cdn/{repo}/{revision}/{name}")  # as the hub sends LFS files to its CDN

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _plain(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_file(self, content: bytes | None) -> None:
        if content is None:
            return self._plain(404, b"Entry not found")
        match = _RANGE.match(self.headers.get("Range") or "")
        start = int(match.group(1)) if match and not self.hub.ignore_range else 0
        if start >= len(content) and start:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(content)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = content[start:]
        self.send_response(206 if start else 200)
        if start:
            total = self.hub.content_range_total or len(content)
            self.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{total}")
        if self.hub.fake_gzip:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.hub.cut_after:
            self.wfile.write(body[: self.hub.cut_after.pop(0)])
            self.wfile.flush()
            self.close_connection = True
            return
        if not self.hub.pace_s:
            self.wfile.write(body)
            return
        for i in range(0, len(body), 16_384):
            try:
                self.wfile.write(body[i : i + 16_384])
                self.wfile.flush()
            except OSError:  # the client went away
                return
            time.sleep(self.hub.pace_s)
