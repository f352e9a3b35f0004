"""``python -m skillgrad ...`` as a process that takes Ctrl-C (SIGINT) the way a terminal delivers
it, whatever disposition the test runner inherited. A shell's background job (``cmd &``, which is
how CI may start the suite) runs with SIGINT ignored, an ignored signal stays ignored across
``exec``, and Python then installs no KeyboardInterrupt handler: a Ctrl-C test would see its
command run to the end (measured: the suite started with ``&`` failed both Ctrl-C tests)."""

from __future__ import annotations

import sys

SKILLGRAD = [
    sys.executable,
    "-c",
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('skillgrad', run_name='__main__', alter_sys=True)",
]
"""The command prefix: ``[*SKILLGRAD, "models", "pull", name]``."""
