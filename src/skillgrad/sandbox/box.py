"""Run untrusted generated code in a subprocess: the sandbox behind code tasks and scorers.

Each run gets a fresh temporary working directory (deleted after), a wall-clock limit (the whole
process group is killed), memory / CPU / file-size rlimits, a scrubbed environment, no network
(a network namespace via ``unshare`` when it works, plus in-process guards) and no writes outside
its directory (an audit hook). ``SandboxResult.isolation`` records which layers were active.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).with_name("harness.py")
OUTPUT_LIMIT = 8_000  # characters of stdout / stderr kept in the result
FSIZE_LIMIT = 16 * 1024 * 1024  # bytes any one file (including captured output) may reach
MIN_MEMORY_MB = 48  # below this the interpreter itself cannot start


@dataclass(frozen=True)
class SandboxResult:
    """What one sandboxed run did. ``tests`` holds ``{"name", "passed", "error"}`` per test;
    ``blocked`` lists operations the guards refused (network, outside writes, processes)."""

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
    blocked: tuple[str, ...] = ()
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
        parts.extend(f"blocked: {b}" for b in self.blocked[:3])
        parts.extend(f"error: {e}" for e in self.errors[:2])
        failed = [t for t in self.tests if not t.get("passed")]
        parts.extend(f"FAILED {t['name']}: {t.get('error', '')}" for t in failed[:4])
        if len(failed) > 4:
            parts.append(f"... and {len(failed) - 4} more failed tests")
        if self.stderr.strip() and not self.errors:
            parts.append("stderr tail: " + self.stderr.strip()[-300:])
        text = "\n".join(parts)
        return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


@functools.lru_cache(maxsize=1)
def network_namespace_prefix() -> tuple[str, ...]:
    """The ``unshare`` command that gives a child an empty network namespace here, or ()."""
    exe = shutil.which("unshare")
    if not exe:
        return ()
    for flags in (("-n",), ("-r", "-n")):
        cmd = (exe, *flags, "--")
        try:
            probe = subprocess.run([*cmd, "true"], capture_output=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            return cmd
    return ()


def _truncate(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return (
        text[: limit // 2]
        + f"\n...[{len(text) - limit} chars truncated]...\n"
        + text[-limit // 2 :]
    )


def _read(path: Path) -> str:
    # Bounded by RLIMIT_FSIZE in the child; read whole so the harness's last events are seen.
    return path.read_bytes().decode("utf-8", errors="replace")


def _parse_stdout(raw: str, nonce: str) -> tuple[str, list[dict[str, Any]]]:
    """Split the harness's marked event lines from the program's own output."""
    kept: list[str] = []
    events: list[dict[str, Any]] = []
    for line in raw.split("\n"):
        before, sep, after = line.partition(nonce)
        if not sep:
            kept.append(line)
            continue
        if before:
            kept.append(before)
        try:
            events.append(json.loads(after))
        except json.JSONDecodeError:
            kept.append(after)  # a torn last line when the process was killed mid-write
    return "\n".join(kept).strip("\n"), events


def _environment(workdir: str) -> dict[str, str]:
    # Only what an interpreter needs: no API keys, tokens or proxies reach untrusted code.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": workdir,
        "TMPDIR": workdir,
    }


def _run_child(
    workdir: str, logdir: Path, timeout_s: float, memory_mb: int, entry_point: str
) -> tuple[int | None, bool, float]:
    prefix = network_namespace_prefix()
    cmd = [
        *prefix, sys.executable, "-I", "-B", str(HARNESS), workdir,
        str(memory_mb), str(max(1, int(timeout_s) + 1)), str(FSIZE_LIMIT), entry_point,
    ]  # fmt: skip
    nonce = (logdir / "nonce").read_text()
    start = time.monotonic()
    with (logdir / "out").open("wb") as out, (logdir / "err").open("wb") as err:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=workdir,
            env=_environment(workdir), start_new_session=True,
        )  # fmt: skip
        assert proc.stdin is not None
        try:
            proc.stdin.write((nonce + "\n").encode())
            proc.stdin.close()
        except OSError:
            pass  # the child died before reading: the exit code tells why
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, timed_out, time.monotonic() - start


def _isolation() -> str:
    layers = ["tmpdir", "rlimits", "env-scrubbed", "audit-hook", "socket-guard"]
    if network_namespace_prefix():
        layers.insert(0, "netns")
    return "+".join(layers)


def _killed_reason(
    returncode: int | None, timed_out: bool, memory: bool, timeout_s: float, memory_mb: int
) -> str:
    if timed_out:
        return f"time limit of {timeout_s:g}s exceeded: process group killed"
    if memory:
        return f"memory limit of {memory_mb} MB exceeded"
    if returncode == -signal.SIGXCPU:
        return "CPU time limit exceeded"
    if returncode == -signal.SIGXFSZ:
        return f"file size limit of {FSIZE_LIMIT} bytes exceeded"
    if returncode is not None and returncode < 0:
        return f"killed by signal {signal.Signals(-returncode).name}"
    return ""


def _result(
    events: list[dict[str, Any]], stdout: str, stderr: str, run: tuple[int | None, bool, float],
    limits: tuple[float, int], with_tests: bool,
) -> SandboxResult:  # fmt: skip
    returncode, timed_out, duration = run
    tests = tuple(
        {"name": e["name"], "passed": bool(e["ok"]), "error": e.get("error", "")}
        for e in events
        if e.get("event") == "test"
    )
    total = next((int(e["total"]) for e in events if e.get("event") == "plan"), len(tests))
    done = any(e.get("event") == "done" for e in events)
    memory = any(e.get("event") == "memory" for e in events) or "MemoryError" in stderr
    errors = tuple(f"{e['stage']}: {e['error']}" for e in events if e.get("event") == "error")
    blocked = tuple(dict.fromkeys(e["what"] for e in events if e.get("event") == "blocked"))
    reason = _killed_reason(returncode, timed_out, memory, *limits)
    if not done and not reason and returncode not in (0, None):
        reason = f"exited with code {returncode} before finishing"
    n_passed = sum(t["passed"] for t in tests)
    if with_tests:
        passed = done and total > 0 and n_passed == total and not reason and not errors
    else:
        passed = returncode == 0 and done and not reason and not errors
    return SandboxResult(
        passed=passed, returncode=returncode, stdout=_truncate(stdout), stderr=_truncate(stderr),
        timed_out=timed_out, memory_exceeded=memory, killed_reason=reason,
        duration_s=round(duration, 3), tests_passed=n_passed, tests_total=total,
        isolation=_isolation(), tests=tests, blocked=blocked, errors=errors,
    )  # fmt: skip


def _sandboxed(
    code: str, tests: str | None, timeout_s: float, memory_mb: int, entry_point: str
) -> SandboxResult:
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    if memory_mb < MIN_MEMORY_MB:
        raise ValueError(f"memory_mb must be >= {MIN_MEMORY_MB}, got {memory_mb}")
    # Logs live beside (not inside) the working directory so the code cannot tamper with them.
    with tempfile.TemporaryDirectory(prefix="skillgrad-sbx-") as base:
        logdir = Path(base)
        workdir = logdir / "work"
        workdir.mkdir()
        nonce = "@@SBX" + secrets.token_hex(8) + "@@"
        (logdir / "nonce").write_text(nonce)
        (workdir / "solution.py").write_text(code, encoding="utf-8")
        if tests is not None:
            (workdir / "tests.py").write_text(tests, encoding="utf-8")
        run = _run_child(str(workdir), logdir, timeout_s, memory_mb, entry_point)
        stdout, events = _parse_stdout(_read(logdir / "out"), nonce)
        stderr = _read(logdir / "err")
    return _result(events, stdout, stderr, run, (timeout_s, memory_mb), tests is not None)


def run_tests(
    code: str,
    tests: str,
    timeout_s: float = 10.0,
    memory_mb: int = 256,
    *,
    entry_point: str | None = None,
) -> SandboxResult:
    """Run ``code`` then ``tests`` in the sandbox and report per-test results.

    ``tests`` may hold top-level ``assert`` lines (one test each), ``test_*`` functions, and/or a
    HumanEval-style ``check(candidate)`` whose asserts count one test each; ``candidate`` is the
    function ``entry_point`` of the code (default: the last top-level function it defines).
    """
    return _sandboxed(code, tests, timeout_s, memory_mb, entry_point or "")


def run_code(code: str, timeout_s: float = 10.0, memory_mb: int = 256) -> SandboxResult:
    """Run ``code`` alone in the sandbox; ``passed`` means it finished without an error."""
    return _sandboxed(code, None, timeout_s, memory_mb, "")


__all__ = ["SandboxResult", "network_namespace_prefix", "run_code", "run_tests"]
