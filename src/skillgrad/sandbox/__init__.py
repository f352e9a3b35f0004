"""The sandbox: every piece of untrusted code runs in a bubblewrap box (``box.py``), and code is
judged by a process it cannot reach (``code.py``). Full write-up: docs/sandbox.md.

Threat model: the code is hostile. It may try to pass tests it fails, read the training
process's secrets, write outside its directory, reach the network, outlive its time limit or
exhaust the machine. Defended: all of those, as far as namespaces and rlimits go — a read-only
root with only /usr and a few /etc files, private sized tmpfs for /tmp, home, /dev/shm and work,
no network (or one endpoint through ``EndpointRelay``), fresh PID/IPC/UTS/user/mount
namespaces, an empty environment, limits on processes, memory, CPU, file size, open files and
wall clock (the whole box dies), a seccomp filter against memory no limit counts, every text
out of the box cut to a bound (``bounds.py``), and a verdict computed in a second box from plain
values, written on a descriptor only that box holds. Not defended: kernel exploits, the exact
sum of memory across a box's processes (bounded, not capped: docs/sandbox.md), and tests that
ask the solution's own objects or helpers for their verdict.

Public API: ``run_tests`` / ``run_code`` -> ``SandboxResult`` (code tasks and the ``code_tests``
scorer); ``Box``, ``Limits``, ``run_in_box`` -> ``BoxOutcome`` (any other command, e.g. an agent
CLI); ``EndpointRelay`` (network to one endpoint only); ``preflight`` / ``require_bubblewrap`` /
``SandboxUnavailable``; ``MODES`` (``"bubblewrap"``, and ``"unsandboxed"`` by name only).
"""

from skillgrad.sandbox.box import (
    MODES,
    Box,
    BoxOutcome,
    Limits,
    SandboxUnavailable,
    check_mode,
    preflight,
    require_bubblewrap,
    run_in_box,
)
from skillgrad.sandbox.code import SandboxResult, run_code, run_tests
from skillgrad.sandbox.relay import EndpointRelay

__all__ = [
    "MODES", "Box", "BoxOutcome", "EndpointRelay", "Limits", "SandboxResult", "SandboxUnavailable",
    "check_mode",
    "preflight", "require_bubblewrap", "run_code", "run_in_box", "run_tests",
]  # fmt: skip
