"""A grader zygote: import the grader's libraries once, then fork each grade into fresh namespaces.

Runs as ``python3 -I -B grader_zygote.py MODULES SCRIPT [ARGS...]`` in a sandbox of its own
that never sees agent data (see taskgym.sandbox.local.zygote). Its channel to the host is the
inherited SEQPACKET socket ``TASKGYM_WARM_FD``.

1. Send ``up``, wait for ``mounted`` (the host mounted ``ZPROC``), import ``MODULES``
   (``SCRIPT``'s folder on ``sys.path`` meanwhile; one that raises ImportError is left to the
   script, as in warm_grader.py), check that the process has one thread
   (fork and ``unshare(CLONE_NEWUSER)`` need it), make it non-dumpable, send ``ready`` (or
   ``error <why>``).
2. Loop: each message is a JSON request ``{"mounts": [[path, bytes]...], "seccomp": hex}``
   with one descriptor, the grade's socket. Fork a child, send ``forked <cpu seconds>`` on the
   grade's socket and close it here. The zygote never reads anything else and never runs the
   grader script or agent code.
3. The child (never returning to the loop) closes the zygote's channel, enters a new user,
   mount, pid, ipc, net and uts namespace, and forks the grade as pid 1 of the new pid
   namespace; it waits for it and sends ``exit {"code": n, "cpu": s}``.
4. The grade, before any agent data exists in it: mounts a fresh read-only /proc of its pid
   namespace, covers the zygote's proc (``ZPROC``) with an empty read-only tmpfs, mounts a
   fresh tmpfs of the given size over every writable place (and fails if some other writable
   mount is still reachable), a new devpts instance on /dev/pts, covers /proc/locks (it lists
   the machine's open-file-description locks) with /dev/null, closes every descriptor but
   its socket and 0-2, drops every capability (the bounding and ambient sets too), sets
   no_new_privs, installs the host's seccomp filter (stacked on the zygote's looser one; it
   denies file locks and inotify too: the read-only files are the zygote's inodes, shared by
   every grade running at once), checks all of that in /proc/self/status, then sends
   ``ready`` (the host learns its pid from the socket's credentials, moves it into the
   grade's cgroup, copies the workspace in) and runs ``SCRIPT`` once as warm_grader.py does.
When the grade (pid 1) exits, the kernel kills whatever it left in its pid namespace, and its
mounts go with its mount namespace.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import socket
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves it out

from warm_grader import connect, preload, run_once  # type: ignore[import-not-found]  # noqa: E402

sys.path.pop(0)

ZPROC = "/.taskgym-zproc"
"""Where the host mounted a proc of the zygote's pid namespace with nothing over it: the
kernel lets a user namespace mount a new proc only while a fully visible one exists."""

_NEWNS, _NEWUTS, _NEWIPC = 0x00020000, 0x04000000, 0x08000000
_NEWUSER, _NEWPID, _NEWNET = 0x10000000, 0x20000000, 0x40000000
_RDONLY, _NOSUID, _NODEV, _NOEXEC = 0x1, 0x2, 0x4, 0x8
_REMOUNT, _BIND, _REC, _PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_SECCOMP = 4, 24, 22
_PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
_SECCOMP_MODE_FILTER = 2
_CAP_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(_libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                       ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


def _writable_mounts() -> list[tuple[str, int, str]]:
    """(mount point, device number, type) of each writable mount, from mountinfo."""
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split()
            sep = fields.index("-")
            if "rw" in fields[5].split(","):
                major, minor = (int(n) for n in fields[2].split(":"))
                point = fields[4].encode().decode("unicode_escape")
                found.append((point, os.makedev(major, minor), fields[sep + 1]))
    return found


def _fresh_mounts(mounts: list[list[object]]) -> None:
    """Fresh tmpfs over each listed place, new /proc and /dev/pts; fail on any other
    writable mount still reachable."""
    before = _writable_mounts()
    _mount("none", "/", None, _REC | _PRIVATE)
    _mount("proc", "/proc", "proc", _RDONLY | _NOSUID | _NODEV | _NOEXEC)
    # /proc/locks lists every open-file-description lock of the machine (a pid namespace
    # hides only the others' process-owned ones): covered, as the grade may take none itself
    _mount("/dev/null", "/proc/locks", None, _BIND)
    _mount("none", "/proc/locks", None, _REMOUNT | _BIND | _RDONLY | _NOSUID | _NODEV | _NOEXEC)
    _mount("tmpfs", ZPROC, "tmpfs", _RDONLY | _NOSUID | _NODEV | _NOEXEC, "size=4k,mode=0555")
    for path, size in mounts:
        _mount("tmpfs", str(path), "tmpfs", _NOSUID | _NODEV, f"size={int(str(size))},mode=0755")
    _mount("devpts", "/dev/pts", "devpts", _NOSUID | _NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
    for point, device, fstype in before:
        if point.startswith(("/proc/", "/dev/pts")) or point in ("/proc", ZPROC):
            continue
        try:
            status = os.stat(point, follow_symlinks=False)
        except OSError:
            continue  # under a place covered above
        if status.st_dev == device and (fstype != "devtmpfs" or os.path.isdir(point)):
            raise RuntimeError(f"the writable mount {point} ({fstype}) would be shared with the "
                               "zygote: its sandbox has a writable place the host did not list")


def _lock_down(program: bytes) -> None:
    """No capability, no_new_privs and the strict seccomp filter; checked, fail closed."""
    for cap in range(64):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # past the last cap: EINVAL, ignored
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient caps")
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    code = ctypes.create_string_buffer(program, len(program))
    prog = _Fprog(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if int(fields[name], 16):
            raise RuntimeError(f"{name} is {fields[name].strip()} after dropping every capability")
    if fields["NoNewPrivs"].strip() != "1" or int(fields["Seccomp_filters"]) < 2:
        raise RuntimeError("no_new_privs or the grade's seccomp filter is missing")


def _grade(grade: socket.socket, request: dict[str, object], script: str, args: list[str]) -> None:
    """The grade, pid 1 of its pid namespace (never returns)."""
    try:
        mounts = request["mounts"]
        assert isinstance(mounts, list)
        _fresh_mounts(mounts)
        os.chdir(str(mounts[0][0]))  # the workspace: the first place listed
        for name in os.listdir("/proc/self/fd"):  # nothing the zygote held open goes on
            if int(name) not in (0, 1, 2, grade.fileno()):
                with contextlib.suppress(OSError):
                    os.close(int(name))
        _lock_down(bytes.fromhex(str(request["seccomp"])))
    except BaseException:
        grade.send(b"error " + traceback.format_exc()[-3000:].encode(errors="replace"))
        os._exit(1)
    grade.send(b"ready")
    run_once(grade, script, args)
    os._exit(0)


def _child(grade: socket.socket, request: dict[str, object], script: str, args: list[str]) -> None:
    """Between the zygote and the grade: new namespaces, then the grade as their pid 1."""
    try:
        uid, gid = os.getuid(), os.getgid()
        _check(_libc.unshare(_NEWUSER | _NEWNS | _NEWPID | _NEWIPC | _NEWNET | _NEWUTS), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as out:
                out.write(text)
        pid = os.fork()
    except BaseException:
        grade.send(b"error " + traceback.format_exc()[-3000:].encode(errors="replace"))
        os._exit(1)
    if pid == 0:
        _grade(grade, request, script, args)
    _, status, _usage = os.wait4(pid, 0)
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    report = {"code": os.waitstatus_to_exitcode(status), "cpu": cpu,
              "peak_bytes": kids.ru_maxrss * 1024}
    try:
        grade.send(b"exit " + json.dumps(report).encode())
    finally:
        os._exit(0)


def main() -> None:
    modules, script, *args = sys.argv[1:]
    channel = connect()
    channel.send(b"up")  # the sandbox is set up: the host mounts ZPROC now
    if channel.recv(16) != b"mounted":
        os._exit(1)
    folder = os.path.dirname(os.path.abspath(script))
    sys.path.insert(0, folder)
    try:
        preload(modules)
        threads = len(os.listdir("/proc/self/task"))
        if threads != 1:
            raise RuntimeError(f"the grader's modules started {threads - 1} thread(s) at import: "
                               "a zygote must be single-threaded to fork grades")
        if not os.path.exists(f"{ZPROC}/self"):
            raise RuntimeError(f"no proc at {ZPROC}: the host did not mount it")
        _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "non-dumpable")
    except BaseException:
        channel.send(b"error " + traceback.format_exc()[-3000:].encode(errors="replace"))
        os._exit(1)
    sys.path.remove(folder)  # the script adds its own folder, as when run cold
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    channel.send(b"ready")
    while True:
        data, fds, _flags, _addr = socket.recv_fds(channel, 1 << 16, 1)
        if not data:
            os._exit(0)  # the host closed the channel
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            continue
        grade = socket.socket(fileno=fds[0])
        began = time.process_time()
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            channel.close()
            _child(grade, json.loads(data), script, args)
        try:
            grade.send(f"forked {time.process_time() - began:.6f}".encode())
        except OSError:
            pass
        grade.close()


if __name__ == "__main__":
    main()
