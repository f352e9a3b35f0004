"""The judge: runs the tests in their own box and writes the verdict on a channel only it holds.

Run as module ``inbox.judge`` with ``TESTS_PATH REQUEST_FD REPLY_FD VERDICT_FD ENTRY_POINT``.
The solution lives in another process (``host``, another box); every name it defines is a
``Remote`` here, and a call sends VALUES over the pipes and gets values back (``wire`` decodes
only to exact builtin types). Assertions, comparisons and the verdict are computed here, so
nothing the solution does can pass a failing assertion: it can only return values.
A value of a builtin type's subclass (a namedtuple, an IntEnum member, an OrderedDict) crosses
as its builtin value and compares by value. Any other object stays remote: it has no truth value,
equals itself, is unequal to None, and any other ``==`` / ``!=`` with it is a TypeError, so
``assert f(x) != y`` cannot pass on an object whose value the judge cannot see.

``tests`` may hold top-level ``assert`` lines (one test each), ``test_*`` functions, and/or a
HumanEval-style ``check(candidate)`` whose asserts count one test each; ``candidate`` is
``ENTRY_POINT`` of the solution (default: the last top-level function it defines).
Verdict events (one JSON object per line on VERDICT_FD): plan, test, error, memory, done.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import json
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from typing import Any

from . import wire


class SolutionError(Exception):
    """An exception of the solution's own type, or its process ending."""


_PASSTHROUGH = (StopIteration, StopAsyncIteration, GeneratorExit)
REMOTE_NOTE = "(raised in the solution's process)"


class Link:
    """The judge's end of the pipes to the solution host."""

    def __init__(self, request_fd: int, reply_fd: int) -> None:
        self.request_fd, self.reply_fd = request_fd, reply_fd
        self.gone = ""

    def hello(self) -> dict[str, Any]:
        try:
            return wire.receive(self.reply_fd)
        except (EOFError, wire.WireError, OSError) as exc:
            self.gone = f"the solution's process ended while loading ({exc})"
            return {"failed": self.gone}

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.gone:
            raise SolutionError(self.gone)
        try:
            wire.send(self.request_fd, message)
            reply = wire.receive(self.reply_fd)
        except (EOFError, OSError) as exc:
            self.gone = f"the solution's process ended ({exc})"
            raise SolutionError(self.gone) from None
        raised = reply.get("raised")
        if isinstance(raised, dict):
            name, message_text = str(raised.get("type")), str(raised.get("message"))
            cls = getattr(builtins, name, None)
            if (
                isinstance(cls, type)
                and issubclass(cls, Exception)
                and not issubclass(cls, _PASSTHROUGH)
            ):
                error: Exception = cls(message_text)
            else:
                error = SolutionError(f"{name}: {message_text}")
            error.add_note(REMOTE_NOTE)
            raise error
        return reply

    def value(self, message: dict[str, Any]) -> Any:
        reply = self.request(message)
        if "value" not in reply:
            raise SolutionError("the solution's process sent no value")
        return self.decode(reply["value"])

    def decode(self, data: Any) -> Any:
        return wire.decode(data, self._handle)

    def _handle(self, tagged: dict[str, Any]) -> Any:
        if "m" in tagged:  # the judge's own copy of the module, never the solution's
            return importlib.import_module(str(tagged["m"]))
        return Remote(int(tagged["h"]), self)

    def encode(self, value: Any) -> Any:
        def handle(obj: Any) -> Any:
            if isinstance(obj, Remote):
                return {"h": obj._number}
            raise wire.WireError(f"a {type(obj).__name__} cannot be sent to the solution")

        return wire.encode(value, handle)


class Remote:
    """An object living in the solution's process."""

    __slots__ = ("_link", "_number")

    def __init__(self, number: int, link: Link) -> None:
        self._number, self._link = number, link

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        link = self._link
        return link.value(
            {
                "op": "call",
                "obj": self._number,
                "args": [link.encode(a) for a in args],
                "kwargs": [[k, link.encode(v)] for k, v in kwargs.items()],
            }
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._link.value({"op": "attr", "obj": self._number, "name": name})

    def __iter__(self) -> Iterator[Any]:
        iterator = self._link.value({"op": "iter", "obj": self._number})
        if not isinstance(iterator, Remote):
            raise SolutionError("iter() of a solution object gave no iterator")
        while True:
            reply = self._link.request({"op": "next", "obj": iterator._number})
            if reply.get("stop") is True:
                return
            yield self._link.decode(reply.get("value"))

    def __len__(self) -> int:
        size = self._link.value({"op": "len", "obj": self._number})
        if type(size) is not int:
            raise SolutionError("len() of a solution object is not an int")
        return size

    def __getitem__(self, key: Any) -> Any:
        request = {"op": "item", "obj": self._number, "key": self._link.encode(key)}
        return self._link.value(request)

    def __bool__(self) -> bool:
        raise TypeError(
            "an object of the solution's own type has no truth value in the tests; "
            "return a builtin value (bool, int, str, list, ...)"
        )

    def _same(self, other: object) -> bool:
        """Whether ``other`` is this very object (None never is); else the comparison cannot be
        answered without the solution's own ``__eq__``, which the judge never asks."""
        if isinstance(other, Remote) and other._number == self._number:
            return True
        if other is None:
            return False
        raise TypeError(
            f"{self!r} is an object of the solution's own type: the tests cannot compare it "
            f"with {type(other).__name__} values; return a builtin value (bool, int, str, "
            "list, dict, ...)"
        )

    def __eq__(self, other: object) -> bool:
        return self._same(other)

    def __ne__(self, other: object) -> bool:
        return not self._same(other)

    def __hash__(self) -> int:
        return hash(("solution object", self._number))

    def __repr__(self) -> str:
        return f"<solution object #{self._number}>"


class VerdictStream:
    def __init__(self, fd: int) -> None:
        self.out = os.fdopen(fd, "w", encoding="utf-8")

    def emit(self, **event: Any) -> None:
        """One event line; its texts cut (the solution chooses its exceptions' messages)."""
        event = {
            k: wire.cut(v, wire.TEXT_CHARS) if isinstance(v, str) else v for k, v in event.items()
        }
        self.out.write(json.dumps(event, default=repr) + "\n")
        self.out.flush()


def error_text(exc: BaseException, limit: int = 3) -> str:
    """The exception with the last frames of the tests (this file's frames hidden)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    lines = traceback.format_list(frames[-limit:])
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()


def short(value: object, n: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "..."


class Runner:
    def __init__(self, verdict: VerdictStream) -> None:
        self.verdict = verdict
        self.passed = 0

    def run_assert(self, node: ast.Assert, ns: dict[str, Any]) -> None:
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            got = eval(compile(ast.Expression(test.left), "tests.py", "eval"), ns)
            want = eval(compile(ast.Expression(test.comparators[0]), "tests.py", "eval"), ns)
            if not got == want:
                raise AssertionError(f"got {short(got)}, expected {short(want)}")
            return
        exec(compile(ast.Module([node], []), "tests.py", "exec"), ns)

    def run_test(self, name: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except MemoryError:
            self.verdict.emit(event="test", name=name, ok=False, error="MemoryError (memory limit)")
            self.verdict.emit(event="memory")
            return
        except BaseException as exc:  # tests may raise anything, even SystemExit
            if REMOTE_NOTE in getattr(exc, "__notes__", ()):
                msg = str(exc)  # the solution's own traceback text, made by the host
            elif isinstance(exc, AssertionError) and str(exc):
                msg = str(exc)
            else:
                msg = error_text(exc)
            self.verdict.emit(event="test", name=name, ok=False, error=msg or type(exc).__name__)
            return
        self.passed += 1
        self.verdict.emit(event="test", name=name, ok=True)

    def statement(self, node: ast.stmt, ns: dict[str, Any]) -> Callable[[], object]:
        if isinstance(node, ast.Assert):
            assert_node = node
            return lambda: self.run_assert(assert_node, ns)
        code = compile(ast.Module([node], []), "tests.py", "exec")
        return lambda: exec(code, ns)


def has_assert(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def plan_tests(tree: ast.Module) -> list[tuple[str, ast.stmt]]:
    """Top-level asserts, ``test_*`` functions and the asserts inside ``check(candidate)``."""
    plan: list[tuple[str, ast.stmt]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            plan.extend(("check", n) for n in node.body)
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            plan.append(("func", node))
        else:
            plan.append(("top", node))
    return plan


def label(src: str, node: ast.AST) -> str:
    text = (ast.get_source_segment(src, node) or "").strip().splitlines()
    first = text[0] if text else type(node).__name__
    return first if len(first) <= 120 else first[:117] + "..."


def solution_names(link: Link, hello: dict[str, Any]) -> dict[str, Any]:
    """Every name the solution defined, as values, modules (the judge's own) or ``Remote``s;
    also importable here as module ``solution``."""
    names: dict[str, Any] = {}
    sent = hello.get("ready")
    if isinstance(sent, dict):
        for name, data in sent.items():
            if isinstance(name, str) and name.isidentifier() and not name.startswith("__"):
                try:
                    names[name] = link.decode(data)
                except ImportError:
                    continue  # a module only the solution's box has: the tests cannot use it
    module = types.ModuleType("solution")
    module.__dict__.update(names)
    sys.modules["solution"] = module
    return names


def tests_namespace(names: dict[str, Any]) -> dict[str, Any]:
    """The tests' globals: the solution's names, except any that would shadow a builtin the
    tests rely on (``abs``, ``sorted``, ``len``...): those stay the judge's own."""
    ns = {k: v for k, v in names.items() if not hasattr(builtins, k)}
    ns["__name__"] = "tests"
    return ns


def run(verdict: VerdictStream, link: Link, tests: str, entry_point: str) -> None:
    try:
        tree = ast.parse(tests, "tests.py")
    except SyntaxError as exc:
        verdict.emit(event="error", stage="tests", error=error_text(exc))
        verdict.emit(event="done", passed=0, total=0)
        return
    plan = plan_tests(tree)
    names = [label(tests, n) for kind, n in plan if kind == "func" or has_assert(n)]
    verdict.emit(event="plan", total=len(names))
    hello = link.hello()
    if "ready" not in hello:
        if hello.get("memory") is True:
            verdict.emit(event="memory")
        verdict.emit(event="error", stage="solution", error=str(hello.get("failed", "")))
        verdict.emit(event="done", passed=0, total=len(names))
        return
    try:
        defined = solution_names(link, hello)
        ns = tests_namespace(defined)
    except (wire.WireError, SolutionError) as exc:
        verdict.emit(event="error", stage="solution", error=f"unreadable solution names: {exc}")
        verdict.emit(event="done", passed=0, total=len(names))
        return
    functions = [f for f in hello.get("functions", []) if isinstance(f, str)]
    candidate_name = entry_point or (functions[-1] if functions else "")
    runner = Runner(verdict)
    check_ns: dict[str, Any] | None = None
    for kind, node in plan:
        if kind == "check" and check_ns is None:
            # built when the first check statement runs, so it sees the tests' own setup
            check_ns = dict(ns)
            check_ns["candidate"] = defined.get(candidate_name)
        scope = check_ns if kind == "check" and check_ns is not None else ns
        if kind == "func" and isinstance(node, ast.FunctionDef):
            exec(compile(ast.Module([node], []), "tests.py", "exec"), ns)
            runner.run_test(label(tests, node), ns[node.name])
        elif has_assert(node):
            runner.run_test(label(tests, node), runner.statement(node, scope))
        else:
            try:
                runner.statement(node, scope)()
            except BaseException as exc:
                verdict.emit(event="error", stage="tests setup", error=error_text(exc))
    verdict.emit(event="done", passed=runner.passed, total=len(names))


def main() -> None:
    path, request_fd, reply_fd, verdict_fd = sys.argv[1], *map(int, sys.argv[2:5])
    entry_point = sys.argv[5] if len(sys.argv) > 5 else ""
    with open(path, encoding="utf-8") as fh:
        tests = fh.read()
    run(VerdictStream(verdict_fd), Link(request_fd, reply_fd), tests, entry_point)


if __name__ == "__main__":
    main()
