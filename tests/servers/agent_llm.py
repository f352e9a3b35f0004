"""A scripted model server for agent CLIs (stdlib http.server in a thread, 127.0.0.1 only).

It speaks the two wires real agent CLIs use: Anthropic ``POST /v1/messages`` (JSON or streamed
SSE, what Claude Code sends) and OpenAI ``POST /v1/responses`` (streamed SSE, what Codex sends),
plus ``/v1/chat/completions`` for command harnesses. Each model turn comes from a ``Policy``: a
function of the request that returns text and/or tool calls, so a test scripts the agent's moves
and asserts on what the agent sent (every request body is recorded).
"""

from __future__ import annotations

import itertools
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolUse:
    """One tool call the scripted model makes: the agent's tool ``name`` and its ``input``."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One scripted model reply: optional text, then tool calls (none means the turn is final)."""

    text: str = ""
    tools: tuple[ToolUse, ...] = ()


Policy = Callable[[str, dict[str, Any]], Turn]  # (wire, request body) -> the reply


@dataclass
class Request:
    wire: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class AgentServer:
    policy: Policy
    requests: list[Request] = field(default_factory=list)
    url: str = ""
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def next_id(self) -> int:
        return next(self._ids)

    def bodies(self, wire: str | None = None) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if wire is None or r.wire == wire]


def request_text(body: dict[str, Any]) -> str:
    """Everything a request shows the model (system, instructions, messages, tool results,
    tool descriptions) as one string: what "reached the model's context" means in a test."""
    return json.dumps(body, ensure_ascii=False)


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def anthropic_message(turn: Turn, model: str, n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    for k, tool in enumerate(turn.tools):
        content.append(
            {"type": "tool_use", "id": f"toolu_{n}_{k}", "name": tool.name, "input": tool.input}
        )
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.tools else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def anthropic_stream(message: dict[str, Any]) -> bytes:
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = {"input_tokens": 100, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            head, delta = dict(block, text=""), {"type": "text_delta", "text": block["text"]}
        else:
            head = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start",
             {"type": "content_block_start", "index": i, "content_block": head}),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]  # fmt: skip
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def responses_stream(turn: Turn, model: str, n: int) -> bytes:
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for k, tool in enumerate(turn.tools):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{n}_{k}",
                "call_id": f"call_{n}_{k}",
                "name": tool.name,
                "arguments": json.dumps(tool.input),
                "status": "completed",
            }
        )
    resp = {"id": f"resp_{n}", "object": "response", "model": model, "status": "in_progress"}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": resp})
    ]
    for i, item in enumerate(items):
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": i, "item": item},
            )
        )
    usage = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 120,
    }
    done = dict(resp, status="completed", output=items, usage=usage)
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return _sse(events)


def chat_completion(turn: Turn, model: str, n: int) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{n}_{k}",
            "type": "function",
            "function": {"name": t.name, "arguments": json.dumps(t.input)},
        }
        for k, t in enumerate(turn.tools)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


_WIRES = {"/messages": "anthropic", "/responses": "responses", "/chat/completions": "chat"}


def _wire(path: str) -> str | None:
    """The wire a POST path speaks (any API root prefix: ``/v1/messages``, ``/messages``)."""
    return next((w for suffix, w in _WIRES.items() if path.rstrip("/").endswith(suffix)), None)


def _handler(server: AgentServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            # model listings some CLIs ask for at start-up
            self._send(200, json.dumps({"object": "list", "data": []}).encode(), "application/json")

        def do_HEAD(self) -> None:
            self._send(200, b"", "text/plain")

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, b'{"error": "invalid JSON"}', "application/json")
                return
            wire = _wire(path)
            if wire is None and path.endswith("/count_tokens"):
                self._send(200, b'{"input_tokens": 100}', "application/json")
                return
            if wire is None:
                self._send(404, json.dumps({"error": f"no route {path}"}).encode(), "text/plain")
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.requests.append(Request(wire, path, headers, body))
            turn = server.policy(wire, body)
            n, model = server.next_id(), str(body.get("model", "scripted"))
            if wire == "anthropic":
                message = anthropic_message(turn, model, n)
                if body.get("stream"):
                    self._send(200, anthropic_stream(message), "text/event-stream")
                else:
                    self._send(200, json.dumps(message).encode(), "application/json")
            elif wire == "responses":
                self._send(200, responses_stream(turn, model, n), "text/event-stream")
            else:
                reply = json.dumps(chat_completion(turn, model, n)).encode()
                self._send(200, reply, "application/json")

    return Handler


@contextmanager
def serve_agent(policy: Policy, tls: tuple[str, str] | None = None) -> Iterator[AgentServer]:
    """Start a scripted server on 127.0.0.1 (a free port); ``server.url`` is its base URL.
    ``tls=(cert_file, key_file)`` serves HTTPS instead."""
    state = AgentServer(policy)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        scheme = "https"
    state.url = f"{scheme}://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


__all__ = ["AgentServer", "Policy", "ToolUse", "Turn", "request_text", "serve_agent"]
