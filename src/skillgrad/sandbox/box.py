"""The box: run one command under bubblewrap with limits, and nothing of ours reachable.

Contract of ``Box(limits, ...).start(argv)`` / ``run_in_box(argv, ...)``:

- Filesystem: an empty root; ``/usr`` (and the ``/bin``, ``/lib*`` links), the few ``/etc`` files
  programs need, the interpreter's prefix and ``extra_ro`` paths are bound READ-ONLY; ``/tmp`` and
  ``HOME`` (``/home/box``) are fresh size-limited tmpfs; the work directory is ``workdir`` bound
  read-write at ``/work`` (or a fresh tmpfs when ``workdir`` is None). Nothing else of the host
  (no ``/work/main``, ``/root``, run directories, sockets) exists inside.
- Namespaces: new user, PID, IPC, UTS, mount, cgroup and network namespaces (``--unshare-all``),
  nested user namespaces disabled, ``--die-with-parent``, ``--new-session`` (no terminal
  injection), a fresh ``/proc`` that shows only the box's processes.
- Environment: ``--clearenv`` plus exactly ``env`` (PATH, HOME, TMPDIR, LANG by default).
- Limits (``Limits``): processes (RLIMIT_NPROC, counted in the box's own user namespace; when we
  run as root the box runs as an unprivileged uid, since the kernel exempts uid 0), address
  space per process, CPU seconds per process, bytes per file, tmpfs sizes, and a wall clock that
  SIGKILLs bubblewrap's process group: the box's PID 1 dies with its parent and the kernel then
  kills every process of the PID namespace, setsid or not.
- Network: none (an empty network namespace with only loopback). ``run_in_box(endpoint=...)``
  binds ONE unix socket in at ``/run/skillgrad/endpoint.sock`` that leads to one endpoint (see
  ``relay.py``); the command reaches it through a loopback port inside the box.

``mode="unsandboxed"`` (opted into by name only) runs the command as a plain subprocess with the
same environment, rlimits and wall clock but none of the isolation; ``isolation`` records it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from skillgrad.errors import ConfigError
from skillgrad.sandbox.relay import EndpointRelay

Mode = Literal["bubblewrap", "unsandboxed"]
MODES: tuple[str, ...] = ("bubblewrap", "unsandboxed")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install "
    "bubblewrap`), or opt out of isolation by name with `sandbox: unsandboxed` in the task's "
    "env.options (the run then records that its code ran unsandboxed)"
)
BOX_HOME = "/home/box"
BOX_WORK = "/work"
INBOX_DIR = "/sbx/inbox"
ENDPOINT_SOCKET = "/run/skillgrad/endpoint.sock"
INBOX_HOST = Path(__file__).with_name("inbox")
_BOX_UID_RANGE = (200_000, 1_200_000)  # unprivileged uids used when we run as root
_ETC = (
    "ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf", "alternatives", "ssl",
    "ca-certificates",
)  # fmt: skip


class SandboxUnavailable(ConfigError):
    """Bubblewrap is missing or cannot create its namespaces here, and no opt-out was given."""


@dataclass(frozen=True)
class Limits:
    """Per-box limits. ``memory_mb``/``cpu_s``/``file_mb`` are per process (rlimits); None means
    no limit of that kind (node's V8 reserves more address space than it uses: agent boxes
    leave ``memory_mb`` None). ``cpu_s`` None means the wall clock plus one second."""

    timeout_s: float = 10.0
    memory_mb: int | None = 256
    cpu_s: int | None = None
    processes: int = 32
    file_mb: int = 16
    tmp_mb: int = 64

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ConfigError(f"sandbox: timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_mb is not None and self.memory_mb < 48:
            raise ConfigError(
                f"sandbox: memory_mb must be >= 48 (the interpreter needs it), got {self.memory_mb}"
            )
        if self.processes < 2:
            raise ConfigError(f"sandbox: processes must be >= 2, got {self.processes}")

    def rlimits(self) -> dict[int, int]:
        cpu = self.cpu_s if self.cpu_s is not None else int(self.timeout_s) + 1
        limits = {
            resource.RLIMIT_NPROC: self.processes,
            resource.RLIMIT_CPU: max(1, cpu),
            resource.RLIMIT_FSIZE: self.file_mb * 1024 * 1024,
            resource.RLIMIT_CORE: 0,
        }
        if self.memory_mb is not None:
            limits[resource.RLIMIT_AS] = self.memory_mb * 1024 * 1024
        return limits


@dataclass(frozen=True)
class BoxOutcome:
    """How a box ended. ``returncode`` is negative for a signal (bubblewrap's 128+N mapped)."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    isolation: str


def check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise ConfigError(f"sandbox: unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    return "unsandboxed" if mode == "unsandboxed" else "bubblewrap"


@functools.lru_cache(maxsize=1)
def bubblewrap_problem() -> str:
    """Why bubblewrap cannot be used here ('' when it works): missing, or namespaces refused."""
    exe = shutil.which("bwrap")
    if not exe:
        return "bubblewrap (`bwrap`) is not installed"
    if not _prlimit():
        return "`prlimit` (Debian package util-linux) is not installed"
    probe = Box(Limits(timeout_s=20, memory_mb=None))
    try:
        out = probe.run(["/bin/true"])
    except OSError as exc:
        return f"bubblewrap cannot start: {exc}"
    if out.returncode != 0:
        return f"bubblewrap cannot create its namespaces here: {out.stderr.strip()[-300:]}"
    return ""


def require_bubblewrap() -> None:
    """Raise ``SandboxUnavailable`` (with how to install) unless the box works here."""
    problem = bubblewrap_problem()
    if problem:
        raise SandboxUnavailable(
            f"code runs only inside the sandbox, but {problem}: {INSTALL_HINT}"
        )


def preflight(mode: str) -> Mode:
    """The checked mode; for ``bubblewrap``, refuse now (``SandboxUnavailable``) unless the box
    works here. Code tasks and scorers call it when they are built, before any model call."""
    checked = check_mode(mode)
    if checked == "bubblewrap":
        require_bubblewrap()
    return checked


def _world_reachable(path: Path) -> bool:
    """Whether an unprivileged uid can read and execute ``path`` (every parent searchable)."""
    try:
        if not os.stat(path).st_mode & stat.S_IROTH:
            return False
        return all(os.stat(p).st_mode & stat.S_IXOTH for p in path.parents)
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def box_python() -> Path:
    """The interpreter the in-box scripts run on: ours when the box's uid can reach it, else the
    system's ``python3`` (the scripts need only the standard library)."""
    candidates = [Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))]
    candidates += [
        Path(os.path.realpath(p)) for p in ("/usr/bin/python3", "/usr/local/bin/python3")
    ]
    for path in candidates:
        if path.is_file() and (os.geteuid() != 0 or _world_reachable(path)):
            return path
    raise SandboxUnavailable(
        "no Python interpreter readable by an unprivileged user "
        f"(tried {', '.join(map(str, candidates))}); "
        "install Debian's python3"
    )


@functools.lru_cache(maxsize=1)
def inbox_dir() -> Path:
    """The in-box scripts' folder as the box's uid can read it: ours, or a world-readable copy
    (when we run as root from a private install such as /root/.venv)."""
    if os.geteuid() != 0 or _world_reachable(INBOX_HOST / "wire.py"):
        return INBOX_HOST
    copy = Path(tempfile.mkdtemp(prefix="skillgrad-inbox-", dir=scratch_root())) / "inbox"
    atexit.register(shutil.rmtree, copy.parent, ignore_errors=True)
    shutil.copytree(INBOX_HOST, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path in (copy.parent, copy, *copy.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def _prefix_of(executable: Path) -> Path | None:
    """The install prefix to bind for an interpreter outside /usr (e.g. ~/.pyenv/versions/X)."""
    if executable.is_relative_to("/usr"):
        return None
    return executable.parent.parent


def default_env() -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": BOX_HOME,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
    }


@dataclass
class Box:
    """One bubblewrap box (see the module docstring for what it guarantees).

    ``workdir``: host directory bound read-write at ``/work`` (None: a fresh tmpfs);
    ``extra_ro``: host paths bound read-only at the same path (e.g. node's global modules);
    ``files``: host files bound read-only at the given in-box path;
    ``env``: the whole environment (default ``default_env()``);
    ``endpoint_socket``: a host unix socket bound at ``ENDPOINT_SOCKET`` (else no network)."""

    limits: Limits = field(default_factory=Limits)
    mode: Mode = "bubblewrap"
    workdir: Path | None = None
    extra_ro: Sequence[Path] = ()
    files: Mapping[str, Path] = field(default_factory=dict)
    env: Mapping[str, str] | None = None
    endpoint_socket: Path | None = None

    def isolation(self) -> str:
        if self.mode == "unsandboxed":
            return "unsandboxed"
        net = "net-endpoint-only" if self.endpoint_socket else "no-network"
        return f"bubblewrap+{net}+rlimits"

    def _bwrap(self) -> list[str]:
        lim = self.limits
        args = [
            shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user", "--disable-userns",
            "--die-with-parent",
            "--new-session", "--clearenv", "--hostname", "box", "--cap-drop", "ALL",
            "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev",
        ]  # fmt: skip
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            top = Path("/") / name
            if top.is_symlink():
                args += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                args += ["--ro-bind", str(top), str(top)]
        for name in _ETC:
            if (Path("/etc") / name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        prefix = _prefix_of(box_python())
        ro = [*([prefix] if prefix else []), *self.extra_ro]
        for path in ro:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--size", str(lim.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
        args += ["--size", str(lim.tmp_mb * 1024 * 1024), "--tmpfs", BOX_HOME]
        if self.workdir is not None:
            args += ["--bind", str(self.workdir), BOX_WORK]
        else:
            args += ["--size", str(lim.tmp_mb * 1024 * 1024), "--tmpfs", BOX_WORK]
        args += ["--ro-bind", str(inbox_dir()), INBOX_DIR]
        for inside, host in self.files.items():
            args += ["--ro-bind", str(host), inside]
        if self.endpoint_socket is not None:
            args += ["--ro-bind", str(self.endpoint_socket), ENDPOINT_SOCKET]
        for key, value in (self.env if self.env is not None else default_env()).items():
            args += ["--setenv", key, value]
        args += ["--chdir", BOX_WORK]
        return [*args, "--", *self._limited()]

    def _limited(self) -> list[str]:
        """``prlimit`` with this box's rlimits, set in the box's own first process."""
        rlimits = self.limits.rlimits()
        if self.mode == "unsandboxed":
            # outside a user namespace RLIMIT_NPROC would count every process of the user
            rlimits.pop(resource.RLIMIT_NPROC)
        # CPU: SIGXCPU at the soft limit, SIGKILL a second later (equal limits: SIGKILL at once)
        limits = [
            f"--{_PRLIMIT[r]}={v}:{v + 1}" if r == resource.RLIMIT_CPU else f"--{_PRLIMIT[r]}={v}"
            for r, v in rlimits.items()
        ]
        return [_prlimit() or "prlimit", *limits, "--"]

    def command(self, argv: Sequence[str]) -> list[str]:
        """The full command line that runs ``argv`` in this box."""
        if self.mode == "unsandboxed":
            return [*self._limited(), *argv]
        return [*self._bwrap(), *argv]

    def start(
        self,
        argv: Sequence[str],
        stdout: IO[bytes] | int,
        stderr: IO[bytes] | int,
        stdin: IO[bytes] | int = subprocess.DEVNULL,
        pass_fds: Sequence[int] = (),
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` in the box (its own process group); see ``finish`` for the wall clock."""
        if self.mode == "unsandboxed":
            env = dict(self.env if self.env is not None else default_env())
            env["HOME"] = env["TMPDIR"] = str(self.workdir or tempfile.gettempdir())
            return subprocess.Popen(
                self.command(argv), stdin=stdin, stdout=stdout, stderr=stderr,
                pass_fds=tuple(pass_fds), cwd=self.workdir, env=env, start_new_session=True,
            )  # fmt: skip
        user = _box_uid() if os.geteuid() == 0 else None
        if user is not None:
            for path in [*([self.workdir] if self.workdir else []), *self.files.values()]:
                _check_reachable(Path(path))
        if user is not None and self.workdir is not None:
            _give(self.workdir, user)  # ``run`` gives it back; callers of ``start``: give_back()
        return subprocess.Popen(
            self.command(argv), stdin=stdin, stdout=stdout, stderr=stderr,
            pass_fds=tuple(pass_fds), start_new_session=True, env={"PATH": "/usr/bin:/bin"},
            user=user, group=user, extra_groups=[] if user is not None else None,
        )  # fmt: skip

    def give_back(self) -> None:
        """After the box is gone: the work directory's files belong to us again (the box ran
        as another uid when we are root)."""
        if self.mode == "bubblewrap" and self.workdir is not None and os.geteuid() == 0:
            _give(self.workdir, os.getuid())

    def run(
        self, argv: Sequence[str], stdin: bytes = b"", output_limit: int = 1 << 20
    ) -> BoxOutcome:
        """Run ``argv`` to its end or the wall clock; stdout/stderr kept up to ``output_limit``."""
        start = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            with tempfile.TemporaryFile() as given:
                given.write(stdin)
                given.seek(0)
                proc = self.start(argv, out, err, stdin=given)
            timed_out = finish([proc], start + self.limits.timeout_s)
            self.give_back()
            stdout, stderr = (_read_capped(f, output_limit) for f in (out, err))
        code = returncode(proc.returncode, self.mode)
        duration = time.monotonic() - start
        return BoxOutcome(code, stdout, stderr, timed_out, duration, self.isolation())


_PRLIMIT = {
    resource.RLIMIT_NPROC: "nproc", resource.RLIMIT_CPU: "cpu", resource.RLIMIT_FSIZE: "fsize",
    resource.RLIMIT_CORE: "core", resource.RLIMIT_AS: "as",
}  # fmt: skip


@functools.lru_cache(maxsize=1)
def _prlimit() -> str:
    """util-linux's ``prlimit``, resolved to a path under /usr (which every box binds)."""
    found = shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")
    return os.path.realpath(found) if found else ""


def _check_reachable(path: Path) -> None:
    blocked = [
        p for p in Path(os.path.abspath(path)).parents if not os.stat(p).st_mode & stat.S_IXOTH
    ]
    if blocked:
        raise ConfigError(
            f"sandbox: {path} cannot be given to the box: its folder {blocked[0]} is closed to "
            "other users, and as root skillgrad runs the box as an unprivileged user (the kernel "
            "does not limit root's processes). Put the work directory under a folder others can "
            "enter (e.g. one made by tempfile.mkdtemp() in /tmp), or `chmod o+x` that folder."
        )


def scratch_root() -> str:
    """Where to make folders a box will see: the temp dir when other users can enter it."""
    tmp = tempfile.gettempdir()
    return tmp if os.geteuid() != 0 or os.stat(tmp).st_mode & stat.S_IXOTH else "/tmp"


def _box_uid() -> int:
    """A fresh unprivileged uid per box, so process counts and files are the box's own."""
    low, high = _BOX_UID_RANGE
    return low + secrets.randbelow(high - low)


def _give(path: Path, uid: int) -> None:
    os.chown(path, uid, uid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)


def _read_capped(fh: IO[bytes], limit: int) -> str:
    fh.seek(0)
    data = fh.read(limit + 1)
    text = data[:limit].decode("utf-8", errors="replace")
    return text + ("\n...[output truncated]" if len(data) > limit else "")


def finish(procs: Sequence[subprocess.Popen[bytes]], deadline: float) -> bool:
    """Wait for every process until ``deadline`` (monotonic); then SIGKILL each one's process
    group, which takes the whole box with it. Returns whether the deadline struck."""
    timed_out = False
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            break
    for proc in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return timed_out


def returncode(code: int | None, mode: Mode) -> int | None:
    """bubblewrap reports a command killed by signal N as 128+N: map it back to -N."""
    if mode == "bubblewrap" and code is not None and 128 < code < 128 + 65:
        return -(code - 128)
    return code


_LAUNCH = (
    "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def inbox_command(module: str, *args: str, mode: Mode) -> list[str]:
    """The argv that runs an in-box script (``inbox.judge``, ``inbox.host``, ``inbox.relay``)
    as a module of the read-only ``inbox`` package."""
    root = INBOX_DIR if mode == "bubblewrap" else str(INBOX_HOST)
    return [str(box_python()), "-I", "-B", "-c", _LAUNCH, str(Path(root).parent), module, *args]


def run_in_box(
    argv: Sequence[str],
    workdir: Path | None = None,
    limits: Limits | None = None,
    *,
    mode: str = "bubblewrap",
    env: Mapping[str, str] | None = None,
    extra_ro: Sequence[Path] = (),
    endpoint: EndpointRelay | None = None,
    endpoint_port: int = 8080,
    stdin: bytes = b"",
) -> BoxOutcome:
    """Run ``argv`` in a ``Box``, refusing (``SandboxUnavailable``) when bubblewrap does not work
    here and ``mode`` is not ``"unsandboxed"``. With ``endpoint``, the command reaches that one
    endpoint at ``http://127.0.0.1:<endpoint_port>`` inside the box and nothing else (in the
    unsandboxed mode the command is run as is and must be pointed at the endpoint itself)."""
    checked = preflight(mode)
    box = Box(limits or Limits(), checked, workdir, extra_ro, {}, env)
    if endpoint is not None and checked == "bubblewrap":
        box.endpoint_socket = endpoint.socket_path
        port = str(endpoint_port)
        argv = inbox_command("inbox.relay", port, ENDPOINT_SOCKET, "--", *argv, mode=checked)
    return box.run(argv, stdin=stdin)


__all__ = [
    "BOX_HOME", "BOX_WORK", "ENDPOINT_SOCKET", "INBOX_DIR", "INSTALL_HINT", "MODES", "Box",
    "BoxOutcome", "Limits", "Mode", "SandboxUnavailable", "box_python", "bubblewrap_problem",
    "check_mode", "finish", "inbox_command", "preflight", "require_bubblewrap", "returncode",
    "run_in_box",
]  # fmt: skip
