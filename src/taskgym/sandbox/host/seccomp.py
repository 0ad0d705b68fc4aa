"""A seccomp filter (classic BPF, built by hand) for every sandboxed process.

It denies what no task needs and what widens the kernel's attack surface, following
Flatpak's list: process_vm_*, keyrings, perf events, the mount API,
unshare/setns, module and kexec loading, bpf, userfaultfd, io_uring (which bypasses
socket filtering), open_by_handle_at, terminal injection through the TIOCSTI and
TIOCLINUX ioctls, and the btrfs ioctls that make subvolumes and snapshots (a subvolume made
inside an on-disk workspace would escape its quota: :mod:`taskgym.sandbox.snapshots.disk`).
``clone3`` answers ENOSYS so libc falls back to ``clone``. A process of another ABI (x32,
i386) is killed.

A grade forked by a grader zygote gets :func:`grade_seccomp_program`: the same, and no file
locks (``flock``, ``fcntl``'s record and open-file-description locks and leases answer ENOLCK)
nor inotify or fanotify (EPERM). Its read-only files are the very inodes of the zygote's
sandbox, shared by every grade running at once: a lock or a watch on one would be seen by
the others.

``ptrace`` stays allowed: debuggers and sanitizers (LeakSanitizer stops threads with it)
are ordinary tools of coding tasks, and the pid namespace leaves only the sandbox's own
processes to trace.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct

__all__ = ["DENIED_IOCTLS", "DENIED_SYSCALLS", "GRADE_DENIED", "LOCK_FCNTLS", "NESTED_ALLOWED",
           "grade_seccomp_program", "nested_seccomp_program", "seccomp_program"]

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
DENIED_IOCTLS = (
    _TIOCSTI, _TIOCLINUX,
    0x50009401, 0x5000940E, 0x50009417, 0x50009418,  # BTRFS_IOC_{SNAP,SUBVOL}_CREATE[_V2]
)
"""ioctl requests that answer EPERM (matched on the request's low 32 bits)."""

# name -> (x86_64, aarch64) syscall numbers
_DENIED = {
    "syslog": (103, 116), "acct": (163, 89), "mount": (165, 40),
    "umount2": (166, 39), "swapon": (167, 224), "swapoff": (168, 225), "reboot": (169, 142),
    "pivot_root": (155, 41), "init_module": (175, 105), "delete_module": (176, 106),
    "quotactl": (179, 60), "kexec_load": (246, 104), "add_key": (248, 217),
    "request_key": (249, 218), "keyctl": (250, 219), "unshare": (272, 97),
    "perf_event_open": (298, 241), "open_by_handle_at": (304, 265), "setns": (308, 268),
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "finit_module": (313, 273), "kexec_file_load": (320, 294), "bpf": (321, 280),
    "userfaultfd": (323, 282), "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "open_tree": (428, 428), "move_mount": (429, 429),
    "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432),
    "fspick": (433, 433), "mount_setattr": (442, 442),
}
DENIED_SYSCALLS = frozenset(_DENIED)
"""Names of the system calls that answer EPERM (the docker backend's profile uses them)."""
NESTED_ALLOWED = frozenset({"mount", "unshare"})
"""What the looser filter of a grader zygote's sandbox allows besides (it never runs agent code;
each grade it forks enters its own namespaces and installs :func:`grade_seccomp_program` on top)."""
GRADE_DENIED: dict[str, tuple[tuple[int, int | None], int]] = {
    "flock": ((73, 32), errno.ENOLCK), "inotify_init": ((253, None), errno.EPERM),
    "inotify_init1": ((294, 26), errno.EPERM), "fanotify_init": ((300, 262), errno.EPERM),
}
"""What a zygote's grade is denied besides: name -> ((x86_64, aarch64) numbers, errno)."""
LOCK_FCNTLS = (5, 6, 7, 36, 37, 38, 1024)
"""fcntl commands a zygote's grade is denied (ENOLCK): F_GETLK, F_SETLK, F_SETLKW,
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE."""
_CLONE3 = (435, 435)
_IOCTL = (16, 29)
_FCNTL = (72, 25)
_ARCH = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program() -> bytes:
    """The filter for this machine's architecture, as bytes for ``bwrap --seccomp``."""
    return _program(DENIED_SYSCALLS)


def grade_seccomp_program() -> bytes:
    """The filter of a grade forked by a grader zygote: :func:`seccomp_program`, and neither
    file locks nor file-event watches (:data:`GRADE_DENIED`, :data:`LOCK_FCNTLS`)."""
    return _program(DENIED_SYSCALLS, grade=True)


def nested_seccomp_program() -> bytes:
    """The filter of a grader zygote's sandbox: :func:`seccomp_program` but for
    :data:`NESTED_ALLOWED`."""
    return _program(DENIED_SYSCALLS - NESTED_ALLOWED)


@functools.cache
def _program(names: frozenset[str], grade: bool = False) -> bytes:
    machine = platform.machine()
    if machine not in _ARCH:
        raise RuntimeError(f"no seccomp filter for architecture {machine}")
    col, audit_arch = _ARCH[machine]
    denied = sorted(_DENIED[name][col] for name in names)
    deny = _ERRNO | errno.EPERM
    prog = [
        _insn(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _insn(_JEQ_K, 1, 0, audit_arch),
        _insn(_RET_K, 0, 0, _KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if machine == "x86_64":  # x32 ABI numbers have bit 30 set
        prog += [_insn(_JGE_K, 0, 1, 0x40000000), _insn(_RET_K, 0, 0, _KILL_PROCESS)]
    for nr in denied:
        prog += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, deny)]
    prog += [_insn(_JEQ_K, 0, 1, _CLONE3[col]), _insn(_RET_K, 0, 0, _ERRNO | errno.ENOSYS)]
    if grade:
        prog += _grade_rules(col)
    # ioctl(fd, request, ...): request is args[1], whose low 32 bits sit at offset 24
    count = len(DENIED_IOCTLS)
    prog += [_insn(_JEQ_K, 0, count + 3, _IOCTL[col]), _insn(_LD_W_ABS, 0, 0, 24)]
    prog += [_insn(_JEQ_K, count - i, 0, request) for i, request in enumerate(DENIED_IOCTLS)]
    prog += [_insn(_RET_K, 0, 0, _ALLOW), _insn(_RET_K, 0, 0, deny)]
    prog.append(_insn(_RET_K, 0, 0, _ALLOW))
    return b"".join(prog)


def _grade_rules(col: int) -> list[bytes]:
    """:data:`GRADE_DENIED`, then fcntl's :data:`LOCK_FCNTLS` (the accumulator holds the
    syscall number, and still does after, for a call that is not fcntl)."""
    prog = []
    for numbers, code in GRADE_DENIED.values():
        number = numbers[col]
        if number is not None:
            prog += [_insn(_JEQ_K, 0, 1, number), _insn(_RET_K, 0, 0, _ERRNO | code)]
    # fcntl(fd, cmd, ...): cmd is args[1], whose low 32 bits sit at offset 24
    count = len(LOCK_FCNTLS)
    prog += [_insn(_JEQ_K, 0, count + 3, _FCNTL[col]), _insn(_LD_W_ABS, 0, 0, 24)]
    prog += [_insn(_JEQ_K, count - i, 0, command) for i, command in enumerate(LOCK_FCNTLS)]
    prog += [_insn(_RET_K, 0, 0, _ALLOW), _insn(_RET_K, 0, 0, _ERRNO | errno.ENOLCK)]
    return prog
