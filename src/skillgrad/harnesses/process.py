"""Run one agent (or check) process in the sandbox's box, with its transcript captured whole.

Each rollout has a host folder ``root`` holding ``work/`` (the agent's working directory) and
``home/`` (its HOME: config files, installed skills). Under bubblewrap ``root`` is bound
read-write at ``/work`` and nothing else of the host is visible, so the agent sees
``/work/work`` and ``/work/home``; unsandboxed (opted into by name) it sees the host paths.
``Layout`` gives both views. stdout and stderr go to files and are read back up to
``OUTPUT_BYTES`` each (head and tail, with a marker saying how much was cut): the agent's event
stream is long, but it is the box's to choose.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from skillgrad.errors import ConfigError
from skillgrad.harnesses.proxy import ConnectProxy
from skillgrad.sandbox import Box, EndpointRelay, Limits, check_mode
from skillgrad.sandbox.bounds import read_bounded
from skillgrad.sandbox.box import BOX_WORK, ENDPOINT_SOCKET, finish, inbox_command, returncode

AGENT_PROCESSES = 512  # node agents start many threads and helper processes
AGENT_OPEN_FILES = 4096  # node and its helpers (ripgrep, shells) hold many descriptors
OUTPUT_BYTES = 32 << 20  # of the agent's stdout, and of its stderr
RELAY_PORT = 8080  # the endpoint's port inside a box (each box has its own network namespace)


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    isolation: str = ""


@dataclass(frozen=True)
class Layout:
    """One rollout's folders on the host and as the agent sees them."""

    host: Path
    mode: str

    @property
    def inside(self) -> Path:
        return Path(BOX_WORK) if self.mode == "bubblewrap" else self.host

    def work(self, inside: bool = False) -> Path:
        return (self.inside if inside else self.host) / "work"

    def home(self, inside: bool = False) -> Path:
        return (self.inside if inside else self.host) / "home"

    def to_host(self, path: str) -> Path:
        """A path as the agent sees it, on the host (for files written before the run)."""
        p = Path(path)
        return self.host / p.relative_to(self.inside) if p.is_relative_to(self.inside) else p


def base_environment(layout: Layout) -> dict[str, str]:
    """What every agent gets: no inherited keys, tokens or proxies; its own HOME."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(layout.home(inside=True)),
        "TMPDIR": "/tmp" if layout.mode == "bubblewrap" else str(layout.home()),
        "NO_COLOR": "1",
        "TERM": "dumb",
    }


@dataclass(frozen=True)
class Access:
    """How a boxed agent reaches its endpoint: the relay to give the box (None: no network or
    unsandboxed), the base URL to configure, and environment to add (a proxy for https)."""

    relay: EndpointRelay | None
    base_url: str
    env: dict[str, str]


@contextmanager
def endpoint_access(base_url: str | None, mode: str) -> Iterator[Access]:
    """Network to the endpoint and nothing else. Under bubblewrap the box has no network; a
    relay forwards its loopback port ``RELAY_PORT`` out of the box. For ``http`` it leads to the
    endpoint itself (base URL rewritten to the port); for ``https`` to a ``ConnectProxy`` that
    tunnels only to the endpoint, and the agent gets ``HTTPS_PROXY`` and keeps the real URL, so
    TLS, SNI, the ``Host`` header and the certificate check are end to end. Unsandboxed, the
    agent calls the endpoint directly."""
    url = base_url or ""
    if mode != "bubblewrap" or not url:
        yield Access(None, url, {})
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"endpoint.base_url {url!r} must be an http(s) URL with a host")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if parts.scheme == "http":
        with EndpointRelay(parts.hostname, port) as relay:
            yield Access(relay, f"http://127.0.0.1:{RELAY_PORT}{parts.path.rstrip('/')}", {})
        return
    proxy_url = f"http://127.0.0.1:{RELAY_PORT}"
    env = {"HTTPS_PROXY": proxy_url, "https_proxy": proxy_url, "NO_PROXY": "", "no_proxy": ""}
    with (
        ConnectProxy(parts.hostname, port) as proxy,
        EndpointRelay("127.0.0.1", proxy.port) as relay,
    ):
        yield Access(relay, url, env)


def run_boxed(
    argv: Sequence[str],
    layout: Layout,
    env: dict[str, str],
    timeout_s: float,
    *,
    stdin: str = "",
    extra_ro: Sequence[Path] = (),
    relay: EndpointRelay | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in ``layout.work`` inside a box; kill everything at ``timeout_s``. With a
    ``relay`` the box reaches that one endpoint on ``127.0.0.1:RELAY_PORT``, else nothing."""
    limits = Limits(
        timeout_s=timeout_s,
        memory_mb=None,
        processes=AGENT_PROCESSES,
        file_mb=256,
        tmp_mb=512,
        open_files=AGENT_OPEN_FILES,
    )
    mode = check_mode(layout.mode)
    box = Box(limits, mode, layout.host, tuple(extra_ro), {}, env)
    # the box starts in its root; the agent works in work/ beside its home/
    cd = ["/bin/sh", "-c", 'cd "$0" && exec "$@"', str(layout.work(inside=True)), *argv]
    if relay is not None and mode == "bubblewrap":
        box.endpoint_socket = relay.socket_path
        cd = inbox_command("inbox.relay", str(RELAY_PORT), ENDPOINT_SOCKET, "--", *cd, mode=mode)
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with tempfile.TemporaryFile() as given:
            given.write(stdin.encode("utf-8"))
            given.seek(0)
            try:
                proc = box.start(cd, out, err, stdin=given)
            except OSError as exc:
                return ProcessOutcome(None, "", f"cannot start {argv[0]}: {exc}", False, 0.0)
        timed_out = finish([proc], start + timeout_s)
        stdout, stderr = (read_bounded(f, OUTPUT_BYTES) for f in (out, err))
    code = returncode(proc.returncode, mode)
    took = time.monotonic() - start
    return ProcessOutcome(code, stdout, stderr, timed_out, took, box.isolation())


def program_roots(program: Path) -> list[Path]:
    """Host folders the box must show (read-only) for ``program`` (a resolved path) to run: its
    whole ``node_modules`` tree for an npm-installed CLI, else its own folder; none under /usr.
    The box runs as an unprivileged user: these folders must be readable by any user."""
    parts = program.parts
    root = (
        Path(*parts[: parts.index("node_modules") + 1])
        if "node_modules" in parts
        else program.parent
    )
    return [] if root.is_relative_to("/usr") else [root]


__all__ = [
    "RELAY_PORT",
    "Access",
    "Layout",
    "ProcessOutcome",
    "base_environment",
    "endpoint_access",
    "program_roots",
    "run_boxed",
]
