"""The sandbox room: run untrusted code in a box (see ``box.py``)."""

from skillgrad.sandbox.box import SandboxResult, run_code, run_tests

__all__ = ["SandboxResult", "run_code", "run_tests"]
