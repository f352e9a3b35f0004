"""The in-sandbox harness: a standalone script (stdlib only) that ``sandbox.py`` runs in a child.

It sets resource limits, installs guards (audit hook: no writes outside the working directory, no
network, no new processes, no ctypes), then runs ``solution.py`` and each test of ``tests.py``,
streaming one marked JSON line per event to stdout so results survive a kill mid-run.
Usage: ``python -I -B sandbox_harness.py WORKDIR MEMORY_MB CPU_S FSIZE_BYTES ENTRY_POINT``.
"""

import ast
import json
import os
import resource
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

Event = Any

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = {
    "os.remove": 1, "os.rename": 2, "os.rmdir": 1, "os.mkdir": 1, "os.chmod": 1, "os.chown": 1,
    "os.link": 2, "os.symlink": 2, "os.truncate": 1, "os.utime": 1, "shutil.rmtree": 1,
    "os.replace": 2,
}  # fmt: skip
BLOCKED_PREFIXES = (
    "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "pty.", "ctypes.", "os.kill", "os.killpg", "socket.", "sys.remote_exec", "os.setuid",
)  # fmt: skip
ALLOWED_WRITE = ("/dev/null",)


class Harness:
    def __init__(self, workdir: str, nonce: str, out: TextIO) -> None:
        self.root = os.path.realpath(workdir)
        self.nonce = nonce
        self.out = out
        self.blocked: list[str] = []

    def emit(self, **event: Event) -> None:
        self.out.write("\n" + self.nonce + json.dumps(event, default=repr) + "\n")
        self.out.flush()

    def inside(self, path: object) -> bool:
        if isinstance(path, int):
            return True  # an already-open descriptor
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        real = os.path.realpath(os.path.join(self.root, str(path)))
        return real == self.root or real.startswith(self.root + os.sep) or real in ALLOWED_WRITE

    def deny(self, what: str) -> None:
        self.blocked.append(what)
        self.emit(event="blocked", what=what)
        raise PermissionError(f"sandbox: {what} is not allowed")

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = [*list(args), None, None, None][:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS
            )
            if writing and not self.inside(path):
                self.deny(f"writing {path!r} outside the working directory")
        elif event in PATH_EVENTS:
            for path in list(args)[: PATH_EVENTS[event]]:
                if not self.inside(path):
                    self.deny(f"{event} on {path!r} outside the working directory")
        elif event.startswith(BLOCKED_PREFIXES):
            what = "network access" if event.startswith("socket.") else event
            self.deny(f"{what} ({event})")


def install_guards(harness: Harness) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        harness.deny("network access")

    class BlockedSocket(socket.socket):
        # a class, not a function: ssl and http.client subclass socket.socket at import time
        def __init__(self, *args: object, **kwargs: object) -> None:
            harness.deny("network access")

    socket.socket = BlockedSocket  # type: ignore[misc]
    for name in ("create_connection", "getaddrinfo", "socketpair", "create_server"):
        setattr(socket, name, no_network)
    sys.addaudithook(harness.audit)


def set_limits(memory_mb: int, cpu_s: int, fsize: int) -> None:
    mem = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def error_text(exc: BaseException, limit: int = 3) -> str:
    """The exception with the last user frames (the harness's own frames are hidden)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    lines = traceback.format_list(frames[-limit:])
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()


def short(value: object, n: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "..."


class Runner:
    def __init__(self, harness: Harness) -> None:
        self.h = harness
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
            self.h.emit(event="test", name=name, ok=False, error="MemoryError (memory limit)")
            self.h.emit(event="memory")
            return
        except BaseException as exc:  # user code may raise anything, even SystemExit
            msg = str(exc) if isinstance(exc, AssertionError) and str(exc) else error_text(exc)
            self.h.emit(event="test", name=name, ok=False, error=msg or type(exc).__name__)
            return
        self.passed += 1
        self.h.emit(event="test", name=name, ok=True)

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


def entry(tree_solution: ast.Module, wanted: str) -> str:
    if wanted:
        return wanted
    names = [n.name for n in tree_solution.body if isinstance(n, ast.FunctionDef)]
    return names[-1] if names else ""


def main() -> None:
    workdir, memory_mb, cpu_s, fsize, entry_point = sys.argv[1:6]
    nonce = sys.stdin.readline().strip()
    out = os.fdopen(os.dup(1), "w")
    os.chdir(workdir)
    sys.path.insert(0, workdir)
    harness = Harness(workdir, nonce, out)
    set_limits(int(memory_mb), int(cpu_s), int(fsize))
    install_guards(harness)
    harness.emit(event="start")
    with open("solution.py", encoding="utf-8") as fh:
        solution = fh.read()
    tests: str | None = None
    if os.path.exists("tests.py"):
        with open("tests.py", encoding="utf-8") as fh:
            tests = fh.read()
    run(harness, solution, tests, entry_point)


def run(harness: Harness, solution: str, tests: str | None, entry_point: str) -> None:
    ns: dict[str, Any] = {"__name__": "solution"}
    plan: list[tuple[str, ast.stmt]] = []
    src = tests or ""
    if tests is not None:
        try:
            tree = ast.parse(tests, "tests.py")
        except SyntaxError as exc:
            harness.emit(event="error", stage="tests", error=error_text(exc))
            harness.emit(event="done", passed=0, total=0)
            return
        plan = plan_tests(tree)
    runner = Runner(harness)
    names = [label(src, n) for kind, n in plan if kind == "func" or has_assert(n)]
    harness.emit(event="plan", total=len(names))
    try:
        exec(compile(solution, "solution.py", "exec"), ns)
        sol_tree = ast.parse(solution)
    except MemoryError:
        harness.emit(event="memory")
        harness.emit(event="done", passed=0, total=len(names))
        return
    except BaseException as exc:
        harness.emit(event="error", stage="solution", error=error_text(exc))
        harness.emit(event="done", passed=0, total=len(names))
        return
    check_ns: dict[str, Any] | None = None
    for kind, node in plan:
        if kind == "check" and check_ns is None:
            # built when the first check statement runs, so it sees the tests' own setup
            check_ns = dict(ns)
            check_ns["candidate"] = ns.get(entry(sol_tree, entry_point))
        scope = check_ns if kind == "check" and check_ns is not None else ns
        if kind == "func" and isinstance(node, ast.FunctionDef):
            exec(compile(ast.Module([node], []), "tests.py", "exec"), ns)
            runner.run_test(label(src, node), ns[node.name])
        elif has_assert(node):
            runner.run_test(label(src, node), runner.statement(node, scope))
        else:
            try:
                runner.statement(node, scope)()
            except BaseException as exc:
                harness.emit(event="error", stage="tests setup", error=error_text(exc))
    harness.emit(event="done", passed=runner.passed, total=len(names))


if __name__ == "__main__":
    main()
