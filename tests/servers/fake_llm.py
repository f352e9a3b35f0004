"""A small fake LLM server (stdlib http.server in a thread) speaking three wire shapes.

OpenAI ``/v1/chat/completions``, Azure ``/openai/deployments/{d}/chat/completions`` and Anthropic
``/v1/messages``, with injectable faults (429 + Retry-After, 5xx, 400, stalls, truncated or invalid
bodies) and a llama.cpp-like rejection of ``response_format``. Also runnable as a script (bench).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Reply = Callable[[dict[str, Any]], "str | dict[str, Any] | list[Any]"]
_AZURE_PATH = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")
# The message llama.cpp's server sends (with HTTP 500) for a response_format it does not know.
LLAMACPP_REJECTION = 'response_format type must be one of "text" or "json_object", but got: {}'


@dataclass
class Fault:
    """One injected misbehaviour, consumed by the next request."""

    status: int | None = None
    message: str = "injected fault"
    retry_after: float | None = None
    sleep: float = 0.0
    truncate: bool = False
    invalid_json: bool = False
    echo_headers: bool = False
    """Append the request's headers (Authorization included) to the error message, as some
    misconfigured proxies do."""


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


def _last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return str(content or "")
    return ""


def echo_reply(body: dict[str, Any]) -> str:
    return _last_user_text(body)


def _words(value: Any) -> int:
    return len(json.dumps(value).split())


@dataclass
class FakeLLMServer:
    latency: float = 0.0
    reply: Reply = echo_reply
    api_key: str | None = None
    reject_modes: tuple[str, ...] = ()
    tool_call: dict[str, Any] | None = None
    echo_authorization: bool = False
    """Every OpenAI reply ends with the request's ``Authorization`` header, key included (a
    misconfigured gateway or a hostile endpoint)."""
    azure_deployment: str = "my-deployment"
    azure_api_version: str = "2024-10-21"
    faults: deque[Fault] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def add_faults(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def count(self, predicate: Callable[[Recorded], bool] | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if predicate is None or predicate(r))

    def start(self, port: int = 0) -> FakeLLMServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = _Server(("127.0.0.1", port), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers stalled by a `sleep` fault
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)


@contextmanager
def serve(**kwargs: Any) -> Iterator[FakeLLMServer]:
    """Start a FakeLLMServer on a free 127.0.0.1 port for the ``with`` block."""
    server = FakeLLMServer(**kwargs).start()
    try:
        yield server
    finally:
        server.stop()


class _Server(ThreadingHTTPServer):
    # the default backlog of 5 drops connections when 50 clients connect at once
    request_queue_size = 256
    daemon_threads = True
    block_on_close = False


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLMServer
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm plus the
    # client's delayed ACK add ~40 ms to every response
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        # the client may have given up (timeout test): then there is nothing to answer
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._handle()

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(
            status, {"error": {"code": status, "message": message, "type": "error"}}, headers
        )

    def _handle(self) -> None:
        fake = self.fake
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return self._error(400, "request body is not JSON")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._record(Recorded("POST", url.path, query, headers, body))
        if fake.latency:
            time.sleep(fake.latency)
        fault = fake._next_fault()
        if fault is not None and self._apply_fault(fault, headers):
            return None
        if url.path == "/v1/chat/completions":
            return self._openai(body, headers, azure=False)
        match = _AZURE_PATH.match(url.path)
        if match:
            return self._azure(match.group(1), query, body, headers)
        if url.path == "/v1/messages":
            return self._anthropic(body, headers)
        return self._error(404, f"no route {url.path}")

    def _apply_fault(self, fault: Fault, headers: dict[str, str]) -> bool:
        if fault.sleep:
            self.fake._stopping.wait(fault.sleep)
        if fault.truncate:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "5000")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-1", "choices": [{"mess')
            self.wfile.flush()
            self.close_connection = True
            return True
        if fault.invalid_json:
            self._send(200, b"<html>upstream proxy error</html>{not json")
            return True
        if fault.status is not None:
            extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after else {}
            echoed = f" (request headers: {json.dumps(headers)})" if fault.echo_headers else ""
            self._error(fault.status, fault.message + echoed, extra)
            return True
        return False

    def _answer(self, body: dict[str, Any]) -> str:
        value = self.fake.reply(body)
        return value if isinstance(value, str) else json.dumps(value)

    def _openai(self, body: dict[str, Any], headers: dict[str, str], azure: bool) -> None:
        fake = self.fake
        if fake.api_key and not azure and headers.get("authorization") != f"Bearer {fake.api_key}":
            return self._error(401, "Incorrect API key provided")
        rf = body.get("response_format") or {}
        if rf.get("type") in fake.reject_modes:
            return self._error(500, LLAMACPP_REJECTION.format(rf.get("type")))
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if body.get("tools") and fake.tool_call is not None:
            message["tool_calls"] = [fake.tool_call]
            finish = "tool_calls"
        else:
            message["content"] = self._answer(body)
            if fake.echo_authorization:
                message["content"] += f" (you sent Authorization: {headers.get('authorization')})"
        usage = {"prompt_tokens": _words(body.get("messages")), "completion_tokens": 3}
        usage["total_tokens"] = usage["prompt_tokens"] + 3
        self._send(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"), "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        })  # fmt: skip

    def _azure(
        self, deployment: str, query: dict[str, str], body: dict[str, Any], headers: dict[str, str]
    ) -> None:
        fake = self.fake
        if query.get("api-version") != fake.azure_api_version:
            return self._error(404, f"api-version {query.get('api-version')!r} not supported")
        if fake.api_key and headers.get("api-key") != fake.api_key:
            return self._error(401, "Access denied due to invalid subscription key")
        if deployment != fake.azure_deployment:
            return self._error(404, f"The API deployment {deployment} does not exist")
        return self._openai(body, headers, azure=True)

    def _anthropic(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        fake = self.fake
        # anthropic SDK 0.x sends x-api-key; 2.x sends the same key as a Bearer token
        keys = {headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")}
        if fake.api_key and fake.api_key not in keys:
            return self._error(401, "invalid x-api-key")
        if not headers.get("anthropic-version"):
            return self._error(400, "anthropic-version header is required")
        if "max_tokens" not in body:
            return self._error(400, "max_tokens: Field required")
        if any(m.get("role") == "system" for m in body.get("messages", [])):
            return self._error(400, "messages: Unexpected role 'system'; use top-level system")
        choice = body.get("tool_choice") or {}
        if choice.get("type") == "tool":
            value = fake.reply(body)
            data = json.loads(value) if isinstance(value, str) else value
            block: dict[str, Any] = {
                "type": "tool_use", "id": "toolu_1", "name": choice["name"], "input": data,
            }  # fmt: skip
            stop = "tool_use"
        else:
            block, stop = {"type": "text", "text": self._answer(body)}, "end_turn"
        self._send(200, {
            "id": "msg_fake", "type": "message", "role": "assistant",
            "model": body.get("model", "fake"), "content": [block], "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": _words(body.get("messages")), "output_tokens": 3},
        })  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes: ``python tests/servers/fake_llm.py --latency 0.1``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args(argv)
    server = FakeLLMServer(latency=args.latency).start(args.port)
    print(f"PORT {server.port}", flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
