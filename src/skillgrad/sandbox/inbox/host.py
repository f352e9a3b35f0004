"""The solution host: runs the untrusted ``solution.py`` and answers the judge's calls.

Run as module ``inbox.host`` with ``SOLUTION_PATH REQUEST_FD REPLY_FD``. Everything in this
process is under the solution's control, and that is assumed: the host only ever sends VALUES (see
``wire``), and the verdict is computed by the judge, in another box, from those values.
First message: ``{"ready": {name: value-or-handle}, "functions": [...]}`` or ``{"failed": text}``.
Then one reply per request: ``{"value": v}``, ``{"raised": {"type", "message"}}`` or
``{"stop": true}`` (an exhausted iterator).
"""

from __future__ import annotations

import ast
import sys
import traceback
import types
from pathlib import Path
from typing import Any

from . import wire

objects: list[Any] = []


def handle(value: Any) -> dict[str, Any]:
    if isinstance(value, types.ModuleType):
        return {"m": value.__name__}
    objects.append(value)
    return {"h": len(objects) - 1}


def lookup(number: int) -> Any:
    if not 0 <= number < len(objects):
        raise wire.WireError(f"no object #{number}")
    return objects[number]


def error_text(exc: BaseException, limit: int = 3) -> str:
    """The exception with the last frames of the solution (this file's frames hidden)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    lines = traceback.format_list(frames[-limit:])
    lines += traceback.format_exception_only(type(exc), exc)
    return wire.cut("".join(lines).strip(), wire.TEXT_CHARS)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    target = lookup(int(request.get("obj", -1)))  # a module is never a target: it went by name
    if op == "call":
        args = [wire.decode(a, lookup) for a in request.get("args", [])]
        kwargs = {str(k): wire.decode(v, lookup) for k, v in request.get("kwargs", [])}
        result = target(*args, **kwargs)
    elif op == "attr":
        result = getattr(target, str(request.get("name")))
    elif op == "iter":
        result = iter(target)
    elif op == "next":
        try:
            result = next(target)
        except StopIteration:
            return {"stop": True}
    elif op == "len":
        result = len(target)
    elif op == "item":
        result = target[wire.decode(request.get("key"), lookup)]
    else:
        raise wire.WireError(f"unknown request {op!r}")
    return {"value": wire.encode(result, handle)}


def serve(request_fd: int, reply_fd: int) -> None:
    while True:
        try:
            request = wire.receive(request_fd)
        except EOFError:
            return
        try:
            reply = answer(request)
        except BaseException as exc:  # the solution may raise anything, even SystemExit
            name = type(exc).__name__
            text = str(exc) if isinstance(exc, AssertionError) else error_text(exc)
            message = wire.cut(text, wire.TEXT_CHARS)
            reply = {"raised": {"type": name, "message": message}}
        wire.send(reply_fd, reply)


def main() -> None:
    path, request_fd, reply_fd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    source = Path(path).read_text(encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": "solution"}
    try:
        tree = ast.parse(source, "solution.py")
        exec(compile(tree, "solution.py", "exec"), namespace)
        public = {k: v for k, v in namespace.items() if not k.startswith("__")}
        names = {k: wire.encode(v, handle) for k, v in public.items()}
    except MemoryError:
        wire.send(reply_fd, {"failed": "MemoryError (memory limit)", "memory": True})
        return
    except BaseException as exc:
        wire.send(reply_fd, {"failed": error_text(exc)})
        return
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    wire.send(reply_fd, {"ready": names, "functions": functions})
    serve(request_fd, reply_fd)


if __name__ == "__main__":
    main()
