"""The box's seccomp filter: the few system calls that hold memory no size limit counts fail.

``memfd_create`` (and ``memfd_secret``) make files on the kernel's internal tmpfs, which has no
size; SysV ``shmget`` / ``msgget`` / ``semget`` make objects that outlive the process that made
them, bounded only by the IPC namespace's sysctls (unlimited by default). Neither is counted by
``RLIMIT_AS`` while unmapped, so without this filter one process could hold gigabytes for the
box's wall clock. They fail with EPERM; every other call is allowed, and a call made through
another ABI (i386 ``int 0x80``, x32) fails whatever it is, so the numbers below cannot be dodged.

Hand-assembled classic BPF (a dozen instructions): bubblewrap loads a compiled program from a
descriptor (``--seccomp FD``), and libseccomp's Python binding is not on PyPI.
"""

from __future__ import annotations

import errno
import platform
import struct

DENIED = ("memfd_create", "memfd_secret", "shmget", "msgget", "semget")
# asm-generic/unistd.h: shared by aarch64 and riscv64
_GENERIC = {"memfd_create": 279, "memfd_secret": 447, "shmget": 194, "msgget": 186, "semget": 190}
# machine -> (AUDIT_ARCH_* of linux/audit.h, syscall numbers, lowest number of a foreign ABI)
ARCHES: dict[str, tuple[int, dict[str, int], int | None]] = {
    "x86_64": (
        0xC000003E,
        {"memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68, "semget": 64},
        0x40000000,  # __X32_SYSCALL_BIT: x32 calls share the arch value, not the numbers
    ),
    "aarch64": (0xC00000B7, _GENERIC, None),
    "riscv64": (0xC00000F3, _GENERIC, None),
}

_LD_ABS_W = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_NR, _ARCH = 0, 4  # offsets of ``nr`` and ``arch`` in struct seccomp_data
_INSN = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k (native byte order)


def supported(machine: str | None = None) -> bool:
    return (machine or platform.machine()) in ARCHES


def program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one) as bubblewrap reads it; KeyError when
    the architecture is not in ``ARCHES``."""
    arch, numbers, foreign_from = ARCHES[machine or platform.machine()]
    denied = [numbers[name] for name in DENIED]
    # layout: 0 ld arch; 1 jeq arch; 2 ld nr; [3 jge foreign]; n x jeq nr; allow; deny
    body: list[tuple[int, int, int, int]] = [(_LD_ABS_W, 0, 0, _NR)]
    if foreign_from is not None:
        body.append((_JGE_K, 0, 0, foreign_from))  # jt filled below
    body += [(_JEQ_K, 0, 0, nr) for nr in denied]
    allow, deny = 2 + len(body), 3 + len(body)
    insns = [(_LD_ABS_W, 0, 0, _ARCH), (_JEQ_K, 0, deny - 2, arch)]
    for pc, (code, _, _, k) in enumerate(body, start=2):
        jump = deny - pc - 1
        insns.append((code, jump, 0, k) if code != _LD_ABS_W else (code, 0, 0, k))
    insns += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM)]
    assert len(insns) == deny + 1 and insns[allow][3] == _RET_ALLOW
    return b"".join(_INSN.pack(*insn) for insn in insns)


__all__ = ["ARCHES", "DENIED", "program", "supported"]
