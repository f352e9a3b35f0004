"""Real agent CLIs for the harness tests, installed from npm once per machine into a cache dir.

``SKILLGRAD_AGENT_CLI_CACHE`` overrides the folder (default ``/var/tmp/skillgrad-tests-npm``:
the sandbox runs agents as an unprivileged user, so the folder must be readable by any user,
which a root-owned ``~/.cache`` is not, and outside ``/tmp``, which the box replaces).
The versions are pinned so a test run is reproducible.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for `tests.servers`

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
CODEX = "@openai/codex@0.169.0"


def _cache() -> Path:
    default = Path("/var/tmp/skillgrad-tests-npm")
    return Path(os.environ.get("SKILLGRAD_AGENT_CLI_CACHE", default))


def npm_program(package: str, program: str) -> Path:
    """Install ``package`` (pinned) into the cache unless there, and return its ``program``."""
    prefix = _cache() / package.replace("/", "+").replace("@", "")
    exe = prefix / "node_modules" / ".bin" / program
    if exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("CI"):
            pytest.fail("npm is required to install the agent CLI under test")
        pytest.skip("npm is not installed")
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
         package],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not exe.exists():
        pytest.fail(f"npm install {package} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return exe


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return npm_program(CLAUDE_CODE, "claude")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return npm_program(CODEX, "codex")
