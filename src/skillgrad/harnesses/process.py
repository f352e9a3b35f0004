"""Run one agent process: a scrubbed environment, a wall-clock limit that kills its whole process
group, and stdout / stderr captured whole (they are the agent's transcript).

``run_process`` is the seam to the sandbox: it runs the command in the box of
``skillgrad.sandbox`` when that package provides ``run_command``, else as a plain subprocess.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    isolation: str = "subprocess"


def base_environment(home: Path) -> dict[str, str]:
    """What every agent gets: no inherited keys, tokens or proxies; its own HOME and TMPDIR."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "TMPDIR": str(home),
        "NO_COLOR": "1",
        "TERM": "dumb",
    }


def run_process(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    stdin: str = "",
) -> ProcessOutcome:
    """Run ``argv`` in ``cwd`` with exactly ``env``; kill the process group at ``timeout_s``."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=out, stderr=err,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            return ProcessOutcome(None, "", f"cannot start {argv[0]}: {exc}", False, 0.0)
        timed_out = False
        try:
            proc.communicate(stdin.encode(), timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # the agent may leave children behind (servers, shells): end the whole group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", errors="replace")
        stderr = err.read().decode("utf-8", errors="replace")
    return ProcessOutcome(proc.returncode, stdout, stderr, timed_out, time.monotonic() - start)


__all__ = ["ProcessOutcome", "base_environment", "run_process"]
