"""The sandbox: every piece of untrusted code runs in a bubblewrap box (``box.py``), and code is
judged by a process it cannot reach (``code.py``). Threat model and limits: docs/sandbox.md.

Public API: ``run_tests`` / ``run_code`` -> ``SandboxResult`` (code tasks and the ``code_tests``
scorer); ``Box``, ``Limits``, ``run_in_box`` -> ``BoxOutcome`` (any other command, e.g. an agent
CLI); ``EndpointRelay`` (network to one endpoint only); ``require_bubblewrap`` /
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
