"""The box: run one command under bubblewrap with limits, and nothing of ours reachable.

Contract of ``Box(limits, ...).start(argv)`` / ``run_in_box(argv, ...)``:

- Filesystem: an empty root; ``/usr`` (and the ``/bin``, ``/lib*`` links), the few ``/etc`` files
  programs need, the interpreter's prefix and ``extra_ro`` paths are bound READ-ONLY; the in-box
  scripts and ``files`` are COPIED in read-only (so no host path of theirs shows in
  ``/proc/self/mountinfo``). The root, ``/etc`` and ``/dev`` are remounted read-only after the
  mounts. The only writable places are ``/tmp``, ``HOME`` (``/home/box``), ``/dev/shm`` and the
  work directory ``/work``: fresh tmpfs of ``tmp_mb`` each, or for ``/work`` the host directory
  ``workdir`` bound read-write. Nothing else of the host (no ``/work/main``, ``/root``, run
  directories, sockets) exists inside.
- Namespaces: new user, PID, IPC, UTS, mount, cgroup and network namespaces (``--unshare-all``),
  nested user namespaces disabled, ``--die-with-parent``, ``--new-session`` (no terminal
  injection), a fresh ``/proc`` that shows only the box's processes.
- Environment: ``--clearenv`` plus exactly ``env`` (PATH, HOME, TMPDIR, LANG by default).
- Limits (``Limits``): processes (RLIMIT_NPROC, counted in the box's own user namespace; when we
  run as root the box runs as an unprivileged uid, since the kernel exempts uid 0), address
  space per process, CPU seconds per process, bytes per file, open descriptors per process,
  tmpfs sizes, and a wall clock that SIGKILLs bubblewrap's process group: the box's PID 1 dies
  with its parent and the kernel then kills every process of the PID namespace, setsid or not.
  A seccomp filter (``seccomp.py``) makes the calls that hold memory outside all of these fail.
- Network: none (an empty network namespace with only loopback). ``run_in_box(endpoint=...)``
  binds ONE unix socket in at ``/run/skillgrad/endpoint.sock`` that leads to one endpoint (see
  ``relay.py``); the command reaches it through a loopback port inside the box.

``mode="unsandboxed"`` (opted into by name only) runs the command as a plain subprocess with the
same environment, rlimits and wall clock but none of the isolation; ``isolation`` records it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import resource
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from skillgrad.errors import ConfigError
from skillgrad.sandbox.bounds import read_bounded
from skillgrad.sandbox.relay import EndpointRelay
from skillgrad.sandbox.seccomp import ARCHES, supported
from skillgrad.sandbox.seccomp import program as seccomp_program

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
    """Per-box limits. ``memory_mb``/``cpu_s``/``file_mb``/``open_files`` are per process
    (rlimits); None means no limit of that kind (node's V8 reserves more address space than it
    uses: agent boxes leave ``memory_mb`` None). ``cpu_s`` None means the wall clock plus one
    second. ``tmp_mb`` is the size of EACH writable tmpfs (``/tmp``, ``/home/box``, ``/dev/shm``,
    and ``/work`` unless a host directory is bound there)."""

    timeout_s: float = 10.0
    memory_mb: int | None = 256
    cpu_s: int | None = None
    processes: int = 32
    file_mb: int = 16
    tmp_mb: int = 64
    open_files: int = 64

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ConfigError(f"sandbox: timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_mb is not None and self.memory_mb < 48:
            raise ConfigError(
                f"sandbox: memory_mb must be >= 48 (the interpreter needs it), got {self.memory_mb}"
            )
        if self.processes < 2:
            raise ConfigError(f"sandbox: processes must be >= 2, got {self.processes}")
        if self.open_files < 16:
            raise ConfigError(f"sandbox: open_files must be >= 16, got {self.open_files}")
        if self.tmp_mb < 1:
            raise ConfigError(f"sandbox: tmp_mb must be >= 1, got {self.tmp_mb}")

    def rlimits(self) -> dict[int, int]:
        cpu = self.cpu_s if self.cpu_s is not None else int(self.timeout_s) + 1
        limits = {
            resource.RLIMIT_NPROC: self.processes,
            resource.RLIMIT_CPU: max(1, cpu),
            resource.RLIMIT_FSIZE: self.file_mb * 1024 * 1024,
            resource.RLIMIT_CORE: 0,
            resource.RLIMIT_NOFILE: self.open_files,
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
    if not supported():
        return (
            f"the box's seccomp filter knows no system call numbers for {platform.machine()} "
            f"(only {', '.join(ARCHES)})"
        )
    probe = Box(Limits(timeout_s=20, memory_mb=None))
    try:
        out = probe.run(["/bin/true"])
    except OSError as exc:
        return f"bubblewrap cannot start: {exc}"
    if out.returncode != 0:
        return (
            "bubblewrap cannot start the box here (it needs user namespaces and bubblewrap "
            f">= 0.5): {out.stderr.strip()[-300:]}"
        )
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
def inbox_files() -> dict[str, bytes]:
    """The in-box scripts as the box receives them: in-box path -> content (copied in, so no
    host path shows inside and a private install such as /root/.venv needs no readable copy)."""
    return {f"{INBOX_DIR}/{p.name}": p.read_bytes() for p in sorted(INBOX_HOST.glob("*.py"))}


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
    ``files``: host files copied in read-only at the given in-box path when the box starts;
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

    def _bwrap(self, data: Mapping[str, int], filter_fd: int) -> list[str]:
        """bubblewrap's arguments; ``data`` maps in-box paths to descriptors of their content."""
        lim = self.limits
        tmpfs = ["--size", str(lim.tmp_mb * 1024 * 1024), "--tmpfs"]
        args = [
            shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user", "--disable-userns",
            "--die-with-parent",
            "--new-session", "--clearenv", "--hostname", "box", "--cap-drop", "ALL",
            "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", *tmpfs, "/dev/shm",
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
        for path in [*([prefix] if prefix else []), *self.extra_ro]:
            args += ["--ro-bind", str(path), str(path)]
        args += [*tmpfs, "/tmp", *tmpfs, BOX_HOME]
        if self.workdir is not None:
            args += ["--bind", str(self.workdir), BOX_WORK]
        else:
            args += [*tmpfs, BOX_WORK]
        for inside, fd in data.items():
            args += ["--perms", "0444", "--ro-bind-data", str(fd), inside]
        if self.endpoint_socket is not None:
            args += ["--ro-bind", str(self.endpoint_socket), ENDPOINT_SOCKET]
        # after every mount: nothing but the sized tmpfs above (and /work) stays writable
        args += ["--remount-ro", "/dev", "--remount-ro", "/", "--seccomp", str(filter_fd)]
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

    def _payloads(self) -> dict[str, bytes]:
        """What is copied into the box: the in-box scripts and ``files``."""
        copied = {inside: Path(host).read_bytes() for inside, host in self.files.items()}
        return {**inbox_files(), **copied}

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
                [*self._limited(), *argv], stdin=stdin, stdout=stdout, stderr=stderr,
                pass_fds=tuple(pass_fds), cwd=self.workdir, env=env, start_new_session=True,
            )  # fmt: skip
        user = _box_uid() if os.geteuid() == 0 else None
        if user is not None and self.workdir is not None:
            _check_reachable(self.workdir)
            _give(self.workdir, user)  # ``run`` gives it back; callers of ``start``: give_back()
        payloads = self._payloads()
        with _descriptors([*payloads.values(), seccomp_program()]) as fds:
            command = [*self._bwrap(dict(zip(payloads, fds, strict=False)), fds[-1]), *argv]
            return subprocess.Popen(
                command, stdin=stdin, stdout=stdout, stderr=stderr,
                pass_fds=(*pass_fds, *fds), start_new_session=True, env={"PATH": "/usr/bin:/bin"},
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
        """Run ``argv`` to its end or the wall clock; of stdout and stderr at most ``output_limit``
        bytes each are read (head and tail, with a marker saying how much was cut)."""
        start = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            with tempfile.TemporaryFile() as given:
                given.write(stdin)
                given.seek(0)
                proc = self.start(argv, out, err, stdin=given)
            timed_out = finish([proc], start + self.limits.timeout_s)
            self.give_back()
            stdout, stderr = (read_bounded(f, output_limit) for f in (out, err))
        code = returncode(proc.returncode, self.mode)
        duration = time.monotonic() - start
        return BoxOutcome(code, stdout, stderr, timed_out, duration, self.isolation())


_PRLIMIT = {
    resource.RLIMIT_NPROC: "nproc", resource.RLIMIT_CPU: "cpu", resource.RLIMIT_FSIZE: "fsize",
    resource.RLIMIT_CORE: "core", resource.RLIMIT_AS: "as", resource.RLIMIT_NOFILE: "nofile",
}  # fmt: skip


@functools.lru_cache(maxsize=1)
def _prlimit() -> str:
    """util-linux's ``prlimit``, resolved to a path under /usr (which every box binds)."""
    found = shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")
    return os.path.realpath(found) if found else ""


@contextlib.contextmanager
def _descriptors(contents: Sequence[bytes]) -> Iterator[list[int]]:
    """Readable descriptors holding ``contents`` (anonymous temp files, read from the start),
    open until the box has been started: bubblewrap copies each one in and closes it."""
    with contextlib.ExitStack() as stack:
        fds = []
        for content in contents:
            fh = stack.enter_context(tempfile.TemporaryFile())
            fh.write(content)
            fh.flush()
            fh.seek(0)
            fds.append(fh.fileno())
        yield fds


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


def _box_uid() -> int:
    """A fresh unprivileged uid per box, so process counts and files are the box's own."""
    low, high = _BOX_UID_RANGE
    return low + secrets.randbelow(high - low)


def _give(path: Path, uid: int) -> None:
    os.chown(path, uid, uid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)


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
