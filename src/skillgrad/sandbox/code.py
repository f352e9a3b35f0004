"""Run generated code, and judge it against tests, so that the code cannot change its verdict.

``run_tests`` starts TWO boxes joined by two pipes: the host box runs the solution and answers
calls; the judge box runs the tests, calls the solution through the pipes (values only), and
writes the verdict to a file descriptor that only the judge holds (a file the parent opened; it
is not inside any box). The parent reads the verdict after both boxes are gone. The solution can
return wrong values, crash, hang or burn its limits: each of those fails tests, none passes one.
``run_code`` runs a program alone; its own exit status is its verdict.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.runs.io import json_objects
from skillgrad.sandbox.bounds import (
    ERROR_CHARS,
    NAME_CHARS,
    OUTPUT_CHARS,
    cut,
    read_bounded,
    tail,
)
from skillgrad.sandbox.box import (
    Box,
    Limits,
    box_python,
    finish,
    inbox_command,
    preflight,
    returncode,
)

OUTPUT_LIMIT = OUTPUT_CHARS  # characters of the program's stdout / stderr kept in the result
VERDICT_BYTES = 4 << 20  # the judge's events are small; more is cut (and the run fails)
HOST_GRACE_S = 1.0  # how long the solution host may outlive the judge before it is killed


@dataclass(frozen=True)
class SandboxResult:
    """What one run did. ``tests`` holds ``{"name", "passed", "error"}`` per test, as the judge
    saw them; ``stdout``/``stderr`` are the solution's (shortened); ``isolation`` names the box
    (``unsandboxed`` when the user opted out)."""

    passed: bool
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    memory_exceeded: bool
    killed_reason: str
    duration_s: float
    tests_passed: int
    tests_total: int
    isolation: str
    tests: tuple[dict[str, Any], ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def fraction(self) -> float:
        """Share of tests passed (0 when there were none)."""
        return self.tests_passed / self.tests_total if self.tests_total else 0.0

    def summary(self, max_chars: int = 1200) -> str:
        """Feedback text for a scorer / the optimizer: counts, failures, why it stopped."""
        parts = [f"{self.tests_passed}/{self.tests_total} tests passed"]
        if self.killed_reason:
            parts.append(f"stopped: {self.killed_reason}")
        parts.extend(f"error: {e}" for e in self.errors[:2])
        failed = [t for t in self.tests if not t.get("passed")]
        parts.extend(f"FAILED {t['name']}: {t.get('error', '')}" for t in failed[:4])
        if len(failed) > 4:
            parts.append(f"... and {len(failed) - 4} more failed tests")
        if self.stderr.strip() and not self.errors:
            parts.append("stderr tail: " + tail(self.stderr.strip(), 300))
        return cut("\n".join(parts), max_chars)


@contextmanager
def _scratch(files: dict[str, str]) -> Iterator[Path]:
    """A private host folder (0700) holding ``files``: the box gets copies of them, and the
    parent opens the output and verdict files here for it."""
    with tempfile.TemporaryDirectory(prefix="skillgrad-sbx-") as base:
        root = Path(base)
        for name, text in files.items():
            (root / name).write_text(text, encoding="utf-8")
        (root / "work").mkdir(mode=0o700)
        yield root


def _killed_reason(code: int | None, timed_out: bool, memory: bool, limits: Limits) -> str:
    if timed_out:
        return f"time limit of {limits.timeout_s:g}s exceeded: box killed"
    if memory:
        return f"memory limit of {limits.memory_mb} MB exceeded"
    if code == -24:  # SIGXCPU
        return "CPU time limit exceeded"
    if code == -25:  # SIGXFSZ
        return f"file size limit of {limits.file_mb} MB exceeded"
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return ""


def run_tests(
    code: str,
    tests: str,
    timeout_s: float = 10.0,
    memory_mb: int = 256,
    *,
    entry_point: str | None = None,
    mode: str = "bubblewrap",
) -> SandboxResult:
    """Judge ``code`` against ``tests`` (see ``inbox/judge.py`` for the test forms).

    Raises ``SandboxUnavailable`` when bubblewrap does not work here and ``mode`` is not
    ``"unsandboxed"``; ``ConfigError`` for bad limits."""
    limits = Limits(timeout_s=timeout_s, memory_mb=memory_mb)
    checked = preflight(mode)
    start = time.monotonic()
    with _scratch({"solution.py": code, "tests.py": tests}) as root:
        host_box = Box(limits, checked, files={"/src/solution.py": root / "solution.py"})
        judge_box = Box(limits, checked, files={"/src/tests.py": root / "tests.py"})
        inside = "/src" if checked == "bubblewrap" else str(root)
        if checked == "unsandboxed":
            host_box.workdir = judge_box.workdir = root / "work"
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        procs: list[subprocess.Popen[bytes]] = []
        try:
            with (
                (root / "out").open("wb") as out,
                (root / "err").open("wb") as err,
                (root / "verdict").open("wb") as verdict,
                (root / "judge_err").open("wb") as judge_err,
            ):
                vfd = verdict.fileno()
                judge_argv = inbox_command(
                    "inbox.judge", f"{inside}/tests.py", str(request_w), str(reply_r), str(vfd),
                    entry_point or "", mode=checked,
                )  # fmt: skip
                judge_fds = (request_w, reply_r, vfd)
                procs.append(judge_box.start(judge_argv, judge_err, judge_err, pass_fds=judge_fds))
                host_argv = inbox_command(
                    "inbox.host",
                    f"{inside}/solution.py",
                    str(request_r),
                    str(reply_w),
                    mode=checked,
                )
                procs.append(host_box.start(host_argv, out, err, pass_fds=(request_r, reply_w)))
        finally:
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
        judge, host = procs
        timed_out = finish([judge], start + timeout_s)
        finish([host], min(start + timeout_s, time.monotonic() + HOST_GRACE_S))
        events = json_objects(read_bounded(root / "verdict", VERDICT_BYTES))
        stdout, stderr = (read_bounded(root / f, OUTPUT_LIMIT) for f in ("out", "err"))
        judge_stderr = read_bounded(root / "judge_err", OUTPUT_LIMIT)
    duration = time.monotonic() - start
    host_code = returncode(host.returncode, checked)
    tests_run = tuple(
        {
            "name": cut(str(e.get("name")), NAME_CHARS),
            "passed": e.get("ok") is True,
            "error": cut(str(e.get("error", "")), ERROR_CHARS),
        }
        for e in events
        if e.get("event") == "test"
    )
    total = next((int(e["total"]) for e in events if e.get("event") == "plan"), len(tests_run))
    done = any(e.get("event") == "done" for e in events)
    memory = any(e.get("event") == "memory" for e in events)
    errors = [
        cut(f"{e.get('stage')}: {e.get('error')}", ERROR_CHARS)
        for e in events
        if e.get("event") == "error"
    ]
    if not done and not timed_out and judge.returncode != 0:
        errors.append(f"the judge failed: {cut(judge_stderr.strip(), 500)}")
    reason = _killed_reason(host_code, timed_out, memory, limits) if not done or memory else ""
    n_passed = sum(1 for t in tests_run if t["passed"] is True)
    passed = done and total > 0 and n_passed == total and not timed_out and not errors
    return SandboxResult(
        passed=passed, returncode=host_code, stdout=stdout, stderr=stderr,
        timed_out=timed_out, memory_exceeded=memory, killed_reason=reason,
        duration_s=round(duration, 3), tests_passed=n_passed, tests_total=total,
        isolation=host_box.isolation() + "+separate-judge", tests=tests_run, errors=tuple(errors),
    )  # fmt: skip


def run_code(
    code: str, timeout_s: float = 10.0, memory_mb: int = 256, *, mode: str = "bubblewrap"
) -> SandboxResult:
    """Run ``code`` alone in a box; ``passed`` means it exited 0 within its limits."""
    limits = Limits(timeout_s=timeout_s, memory_mb=memory_mb)
    checked = preflight(mode)
    with _scratch({"solution.py": code}) as root:
        box = Box(limits, checked, files={"/src/solution.py": root / "solution.py"})
        path = "/src/solution.py"
        if checked == "unsandboxed":
            box.workdir, path = root / "work", str(root / "solution.py")
        outcome = box.run([str(box_python()), "-I", "-B", path], output_limit=OUTPUT_LIMIT)
    memory = "MemoryError" in outcome.stderr
    reason = _killed_reason(outcome.returncode, outcome.timed_out, memory, limits)
    if not reason and outcome.returncode not in (0, None):
        reason = f"exited with code {outcome.returncode}"
    return SandboxResult(
        passed=outcome.returncode == 0 and not outcome.timed_out, returncode=outcome.returncode,
        stdout=outcome.stdout, stderr=outcome.stderr,
        timed_out=outcome.timed_out, memory_exceeded=memory, killed_reason=reason,
        duration_s=round(outcome.duration_s, 3), tests_passed=0, tests_total=0,
        isolation=outcome.isolation,
    )  # fmt: skip


__all__ = ["SandboxResult", "run_code", "run_tests"]
