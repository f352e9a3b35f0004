"""The box's memory is bounded: every writable place has a size, the rest is read-only, the calls
that hold memory outside every size fail; and no host path of ours shows inside.

Each attack runs as real code in the real box, through ``run_tests`` / ``run_code``.
"""

from __future__ import annotations

import errno
import json
import platform
import struct
import tempfile

import pytest

from skillgrad.sandbox import Limits, run_code, run_tests, seccomp
from skillgrad.sandbox.box import INBOX_HOST

pytestmark = pytest.mark.slow

MB = 1024 * 1024

# Writes 15 MB files (under the 16 MB per-file limit) into a place until it refuses, as the
# attack of issue 16 did, and reports how much each place held.
FILL = """
import json, os
PLACES = ["/fill", "/etc/fill", "/dev/fill", "/dev/shm", "/tmp", "/home/box", "/work",
          "/src/fill", "/sbx/inbox/fill", "/proc/fill"]
chunk = b"x" * (15 * 1024 * 1024)
held = {}
for place in PLACES:
    total, why = 0, "all 20 files written"
    for n in range(20):
        path = place + "-%d" % n if place.endswith("fill") else place + "/fill-%d" % n
        try:
            with open(path, "wb") as fh:
                fh.write(chunk)
        except OSError as exc:
            why = exc.strerror
        if os.path.exists(path):
            total += os.path.getsize(path)
        if why != "all 20 files written":
            break
    held[place] = [total, why]
with open("/dev/null", "w") as fh:
    fh.write("still works")
held["/dev/null"] = "ok"
print(json.dumps(held))
del chunk  # every name the solution defines is sent to the judge
def f():
    return 1
"""


def test_every_writable_place_has_a_size_and_the_rest_is_read_only() -> None:
    result = run_tests(FILL, "assert f() == 1\n", timeout_s=30, memory_mb=256)
    assert result.passed, result.summary()
    held = json.loads(result.stdout.strip().splitlines()[-1])
    assert held.pop("/dev/null") == "ok"
    tmp = Limits().tmp_mb * MB
    for place in ("/dev/shm", "/tmp", "/home/box", "/work"):
        total, why = held.pop(place)
        assert 3 * 15 * MB <= total <= tmp and why == "No space left on device", (place, held)
    for place, (total, why) in held.items():
        assert total == 0 and why in ("Read-only file system", "No such file or directory"), (
            place,
            why,
        )


MEMORY_CALLS = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def outcome(result):
    return "refused: " + errno.errorcode[ctypes.get_errno()] if result < 0 else "allowed"
try:
    os.close(os.memfd_create("hold"))
    print("memfd_create allowed")
except OSError as exc:
    print("memfd_create refused:", errno.errorcode[exc.errno])
print("shmget", outcome(libc.shmget(0, 1 << 20, 0o1000 | 0o600)))
print("msgget", outcome(libc.msgget(0, 0o1000 | 0o600)))
print("semget", outcome(libc.semget(0, 1, 0o1000 | 0o600)))
libc.syscall.restype = ctypes.c_long
print("x32 memfd_create", outcome(libc.syscall(0x40000000 | 319, b"hold", 0)))
print("getpid", "allowed" if os.getpid() > 0 else "?")
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers of x86_64")
def test_calls_that_hold_memory_outside_every_size_fail() -> None:
    result = run_code(MEMORY_CALLS, timeout_s=20, memory_mb=256)
    assert result.passed, result.stderr
    assert result.stdout.splitlines() == [
        "memfd_create refused: EPERM",
        "shmget refused: EPERM",
        "msgget refused: EPERM",
        "semget refused: EPERM",
        "x32 memfd_create refused: EPERM",
        "getpid allowed",
    ]


def test_the_open_files_limit_holds() -> None:
    code = (
        "import os\nfds = []\ntry:\n    while True:\n        fds.append(os.open('/dev/null', 0))\n"
        "except OSError as exc:\n    print(len(fds), exc.strerror)\n"
    )
    result = run_code(code, timeout_s=20, memory_mb=256)
    count, why = result.stdout.split(" ", 1)
    assert int(count) < Limits().open_files and why.strip() == "Too many open files"


MOUNTS = """
print(open("/proc/self/mountinfo").read())
def f():
    return 1
"""


def test_no_host_path_of_ours_shows_in_the_mount_table() -> None:
    tests = "text = open('/proc/self/mountinfo').read()\nassert 'skillgrad' not in text, text\n"
    result = run_tests(MOUNTS, tests, timeout_s=20, memory_mb=256)
    assert result.passed, result.summary()  # the judge's box: the tests' own file
    table = result.stdout
    assert " /src/solution.py " in table and " /sbx/inbox/host.py " in table
    for host in (tempfile.gettempdir() + "/", "skillgrad", str(INBOX_HOST.parent)):
        assert host not in table, table


def _run_filter(program: bytes, arch: int, nr: int) -> int:
    """Classic BPF, the four instructions the filter uses, on a seccomp_data of (nr, arch)."""
    insns = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    data = {0: nr, 4: arch}
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc = data[k]
        elif code in (0x15, 0x35):
            taken = acc == k if code == 0x15 else acc >= k
            pc += jt if taken else jf
        elif code == 0x06:
            return k
        pc += 1


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_the_filter_denies_exactly_its_calls_on_every_architecture(machine: str) -> None:
    arch, numbers, foreign_from = seccomp.ARCHES[machine]
    program = seccomp.program(machine)
    deny, allow = 0x00050000 | errno.EPERM, 0x7FFF0000
    denied = {numbers[name] for name in seccomp.DENIED}
    for nr in range(0, 460):
        assert _run_filter(program, arch, nr) == (deny if nr in denied else allow), nr
    assert _run_filter(program, 0x40000003, 1) == deny  # i386 through int 0x80
    if foreign_from is not None:
        assert _run_filter(program, arch, foreign_from | 1) == deny  # x32
