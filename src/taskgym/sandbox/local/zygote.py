"""Grader zygotes (local backend): import a grader's libraries once per host process, fork
each grade into fresh namespaces of its own.

A zygote is ``inside/grader_zygote.py`` in a bubblewrap sandbox of the grader's spec that
never sees agent data; it differs from an ordinary sandbox in two ways only, both needed to
nest namespaces: bwrap does not disable user namespaces in it, and its seccomp filter allows
``mount`` and ``unshare`` (:func:`~taskgym.sandbox.host.seccomp.nested_seccomp_program`). At boot
the host mounts a proc of the zygote's pid namespace on the empty folder
:data:`~taskgym.sandbox.local.command_line.NESTED_PROC` (through ``nsenter``), because the
kernel lets a new user namespace mount a proc only while a fully visible one exists, and
bwrap's own ``/proc`` has read-only folders over it. For a grade, the host hands the zygote a
new socket; the zygote forks, and the fork enters a new user, mount, pid, ipc, net and uts
namespace, becomes pid 1 of it, mounts fresh tmpfs folders over every writable place and a
read-only proc, drops every capability, sets no_new_privs and installs the ordinary seccomp
filter, and only then says ``ready``. The host reads its pid from the socket's credentials,
moves it into a cgroup of its own (the grade's memory, pid and CPU limits), copies the
workspace in, and sends the go message as :mod:`taskgym.sandbox.grading.warm_run` does. See
docs/security.md, "Warm graders". The grade's host side (its cgroup, workspace, exit report)
is :mod:`taskgym.sandbox.local.zygote_grade`.

A backend whose config says ``grader_zygote=False`` (:class:`~taskgym.sandbox.config.LocalConfig`;
its default is ``TASKGYM_GRADER_ZYGOTE``) uses no zygote: its warm grades use the pool. A zygote that
cannot start (user namespaces refused, ``nsenter`` missing, a library that starts threads)
marks its kind broken for the process; its grades use the pool, and say so.

A zygote lives while its kind is in use: its last warm-grader lease's close stops it, and so
does the idle sweep (:func:`sweep_zygotes`) once its kind had no grade and no reset for the
backend's ``warm_idle_sec``, no grade of it runs and no live episode counts on it; the next
demand (a reset, a grade) boots it again.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from taskgym.errors import SandboxError
from taskgym.sandbox.base import Backend, SandboxSpec
from taskgym.sandbox.grading.forks import GraderForks
from taskgym.sandbox.host.at_fork import at_fork
from taskgym.sandbox.host.booting import JobThread
from taskgym.sandbox.host.seccomp import grade_seccomp_program
from taskgym.sandbox.local.command_line import NESTED_PROC
from taskgym.sandbox.local.zygote_grade import ZygoteGrade, await_ready
from taskgym.sandbox.shell.commands import CONTROL_DIR, CONTROL_MB

if TYPE_CHECKING:
    from taskgym.sandbox.local.backend import LocalBackend
    from taskgym.sandbox.local.launch import Launched

__all__ = ["GraderZygote", "ZygoteForks", "close_zygote", "close_zygotes", "fork_grade",
           "live_zygotes", "start_zygote", "sweep_zygotes", "zygote_command"]

BOOT_SEC = 300.0
"""Longest a zygote may take to import its modules."""
READY_SEC = 30.0
"""Longest a forked grade may take to enter its namespaces."""
SHM_BYTES = 64 << 20
"""The size of a grade's /dev/shm (as bwrap's in an ordinary sandbox)."""
SWEEP_SEC = 1.0
"""How often the zygotes' booting thread, when it has nothing to boot, stops idle zygotes."""


def zygote_command(argv: list[str]) -> list[str]:
    """The zygote's command for a warm grader's stub command (the same arguments)."""
    return [a.replace("/warm_grader.py", "/grader_zygote.py") if a.endswith("/warm_grader.py")
            else a for a in argv]


class GraderZygote:
    """One zygote: ``argv`` (:func:`zygote_command`) in a nested-capable sandbox of ``spec``."""

    def __init__(self, backend: LocalBackend, spec: SandboxSpec, argv: list[str], version: str,
                 kind: tuple[int, str]) -> None:
        self.backend = backend
        self.kind = kind
        """The warm graders' kind it serves (:func:`~taskgym.sandbox.grading.warm.kind_key`)."""
        self.used = time.monotonic()
        """When a grade or a reset of its kind last asked for it (:func:`sweep_zygotes`)."""
        self.forked: list[ZygoteGrade] = []
        self.spec = spec
        self.argv = argv
        self.version = version
        self.done = threading.Event()
        self.error = ""
        self.launched: Launched | None = None
        self.channel: socket.socket | None = None
        self.lock = threading.Lock()
        self.closed = False

    def boot(self) -> None:
        """Start the sandbox, mount its second proc, wait for the imports (run in the thread
        that lives as long as the process: the sandbox dies with the thread that started it)."""
        try:
            self._boot()
        except Exception as exc:
            self.error = f"the grader zygote could not start: {exc}"
            self.close()
        finally:
            self.done.set()

    def _boot(self) -> None:
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            raise SandboxError("nsenter (util-linux) is not installed")
        host, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            env = {**self.spec.env, "TASKGYM_WARM_FD": str(inner.fileno()),
                   "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
            self.launched = self.backend.launch(self.spec.model_copy(update={"env": env}), self.argv,
                                                [inner.fileno()], stdout=subprocess.DEVNULL,
                                                nested=True)
        finally:
            inner.close()
        self.channel = host
        host.settimeout(BOOT_SEC)
        if host.recv(16) != b"up":
            raise SandboxError("it exited before it started")
        mount = subprocess.run(
            [nsenter, "--target", str(self.launched.init_pid), "--mount", "--pid", "--root", "--",
             "mount", "-t", "proc", "-o", "nosuid,nodev,noexec", "proc", NESTED_PROC],
            env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30, check=False)
        if mount.returncode != 0:
            raise SandboxError(f"could not mount its proc: {mount.stderr.strip()}")
        host.send(b"mounted")
        reply = host.recv(1 << 16)
        host.settimeout(None)
        if reply != b"ready":
            raise SandboxError(reply.removeprefix(b"error ").decode(errors="replace")[-2000:]
                               or "it exited")

    @property
    def alive(self) -> bool:
        return (not self.closed and self.launched is not None
                and self.launched.proc.poll() is None)

    def fork(self, grade_spec: SandboxSpec, deadline: float) -> ZygoteGrade:
        """A grade forked into fresh namespaces, ready for its workspace and go message."""
        if not self.done.wait(max(0.0, deadline - time.monotonic())):
            raise SandboxError("the grader zygote was not ready in time")
        if not self.alive or self.channel is None:
            raise SandboxError(self.error or "the grader zygote died")
        mounts = [[grade_spec.workdir, grade_spec.disk_mb << 20], ["/tmp", grade_spec.tmp_mb << 20],
                  ["/dev/shm", SHM_BYTES], [CONTROL_DIR, CONTROL_MB << 20],
                  *([path, grade_spec.tmp_mb << 20] for path in grade_spec.writable_dirs)]
        request = json.dumps({"mounts": mounts, "seccomp": grade_seccomp_program().hex()}).encode()
        host, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            host.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            with self.lock:
                socket.send_fds(self.channel, [request], [inner.fileno()])
            inner.close()
            pid, fork_cpu = await_ready(host, min(deadline, time.monotonic() + READY_SEC))
            grade = ZygoteGrade(host, pid, grade_spec, fork_cpu)
            with self.lock:
                self.forked.append(grade)
            return grade
        except OSError as exc:
            host.close()
            raise SandboxError(f"the grader zygote could not fork a grade: {exc}") from exc
        except BaseException:
            host.close()
            raise
        finally:
            inner.close()

    def running(self) -> bool:
        """Whether a grade it forked is still running."""
        with self.lock:
            self.forked = [grade for grade in self.forked if not grade.closed]
            return bool(self.forked)

    def idle(self, now: float) -> bool:
        """Whether it booted, no grade of it runs, and nothing asked for it for the backend's
        ``warm_idle_sec`` (a running grade counts as asking)."""
        with self.lock:
            self.forked = [grade for grade in self.forked if not grade.closed]
            if self.forked:
                self.used = now
        return self.done.is_set() and now - self.used >= self.backend.warm_idle_sec

    def close(self) -> None:
        self.closed = True
        launched, self.launched = self.launched, None
        if self.channel is not None:
            with contextlib.suppress(OSError):
                self.channel.close()
        if launched is not None:
            launched.kill()
            launched.reap()
            launched.close()



_ZYGOTES: dict[tuple[int, str], GraderZygote] = {}
_BROKEN: set[tuple[int, str]] = set()
_RETIRING: set[GraderZygote] = set()
"""Zygotes taken out of use whose grades still run: closed when those end."""
_LOCK = threading.Lock()
_BOOTS: JobThread[GraderZygote] = JobThread(
    "taskgym-zygote", lambda zygote: _boot(zygote), idle=lambda: sweep_zygotes(), every=SWEEP_SEC)
"""The one thread that boots zygotes (see :mod:`taskgym.sandbox.host.booting`) and sweeps idle ones."""


def _forget_in_child() -> None:
    """In a process forked from the one that started them, the zygotes are the parent's:
    start afresh, neither using nor closing them (the booting thread, and the zygotes queued
    to boot, start afresh by themselves); then free ``_LOCK``, held across the fork so that
    no other thread left these half-changed."""
    _ZYGOTES.clear()
    _BROKEN.clear()
    _RETIRING.clear()
    _LOCK.release()


at_fork(before=_LOCK.acquire, after_in_parent=_LOCK.release, after_in_child=_forget_in_child)


def _boot(zygote: GraderZygote) -> None:
    if not zygote.closed:
        zygote.boot()
    else:
        zygote.done.set()


def _get(backend: LocalBackend, spec: SandboxSpec, argv: list[str], version: str
         ) -> GraderZygote | None:
    """The zygote of this kind (booting one when there is none or its code changed), or
    ``None`` when zygotes are broken for it."""
    command = zygote_command(argv)
    key = _key(backend, spec, command)
    stale = None
    from taskgym.sandbox.grading.warm import kind_key

    with _LOCK:
        if key in _BROKEN:
            return None
        zygote = _ZYGOTES.get(key)
        if zygote is not None and zygote.done.is_set() and (zygote.version != version or not zygote.alive):
            if zygote.error:
                _BROKEN.add(key)
                _ZYGOTES.pop(key)
                return None
            stale, zygote = _ZYGOTES.pop(key), None
        if zygote is None:
            zygote = _ZYGOTES[key] = GraderZygote(backend, spec, command, version,
                                                  kind_key(backend, spec, argv))
            _BOOTS.put(zygote)
        zygote.used = time.monotonic()
    if stale is not None:
        stale.close()
    return zygote


def _key(backend: Backend, spec: SandboxSpec, command: list[str]) -> tuple[int, str]:
    return id(backend), json.dumps([spec.model_dump(mode="json"), command])


def start_zygote(backend: LocalBackend, spec: SandboxSpec, argv: list[str], version: str) -> bool:
    """Begin booting the zygote of this kind (a no-op when it runs); whether zygotes serve it."""
    return _get(backend, spec, argv, version) is not None


def fork_grade(backend: LocalBackend, spec: SandboxSpec, argv: list[str], version: str,
               grade_spec: SandboxSpec, deadline: float) -> ZygoteGrade | None:
    """A grade forked by the zygote of this kind; ``None`` when it cannot serve it (still
    booting at the deadline, closed, or failed: then the kind is marked broken)."""
    zygote = _get(backend, spec, argv, version)
    if zygote is None:
        return None
    try:
        return zygote.fork(grade_spec, deadline)
    except SandboxError as exc:  # fail safe: this kind uses the pool from now on
        if not zygote.done.is_set() or (zygote.closed and not zygote.error):
            return None  # still importing at the grade's deadline, or closed meanwhile (its
            # last lease, the idle sweep): not a failure of the zygote
        zygote.error = zygote.error or str(exc)
        with _LOCK:
            keys = [k for k, z in _ZYGOTES.items() if z is zygote]
            _BROKEN.update(keys)
            for key in keys:
                _ZYGOTES.pop(key)
        zygote.close()
        return None


def sweep_zygotes() -> None:
    """Stop the zygotes idle past their backend's ``warm_idle_sec`` (:meth:`GraderZygote.idle`)
    that no live episode counts on (no warm-grader lease of their kind expects a grade)."""
    from taskgym.sandbox.grading.warm_leases import close_dropped, expected

    close_dropped()
    now = time.monotonic()
    with _LOCK:
        zygotes = list(_ZYGOTES.values())
    counted = {z.kind for z in zygotes if expected(z.kind)}
    with _LOCK:
        keys = [k for k, z in _ZYGOTES.items() if z.kind not in counted and z.idle(now)]
        stale = [_ZYGOTES.pop(k) for k in keys]
    for zygote in stale:
        zygote.close()


def live_zygotes(backend: Backend | None = None) -> list[int]:
    """The host pids of the running zygotes (of ``backend``, or all): for tests and tools."""
    with _LOCK:
        zygotes = [z for z in _ZYGOTES.values() if backend is None or z.backend is backend]
    return [z.launched.init_pid for z in zygotes if z.alive and z.launched is not None]


def close_zygotes(backend: Backend | None = None) -> None:
    """Close the zygotes of ``backend`` (of every backend when ``None``), and forget which of
    its kinds failed (the next grade tries a zygote again)."""
    with _LOCK:
        keys = [k for k, z in _ZYGOTES.items() if backend is None or z.backend is backend]
        zygotes = [_ZYGOTES.pop(k) for k in keys]
        retiring = [z for z in _RETIRING if backend is None or z.backend is backend]
        _RETIRING.difference_update(retiring)
        zygotes += retiring
        _BROKEN.difference_update([k for k in _BROKEN if backend is None or k[0] == id(backend)])
    for zygote in zygotes:
        zygote.closed = True
        zygote.done.wait(30)
        zygote.close()


def close_zygote(backend: Backend, spec: SandboxSpec, argv: list[str]) -> None:
    """Close the zygote of this kind, if one runs (when its last warm-grader lease closes)."""
    with _LOCK:
        zygote = _ZYGOTES.pop(_key(backend, spec, zygote_command(argv)), None)
        if zygote is None:
            return
        zygote.closed = True  # no new grade forks from it
        if zygote.running():  # killing it now would kill them: close it when they end
            _RETIRING.add(zygote)
            threading.Thread(target=_retire, args=(zygote,), daemon=True,
                             name="taskgym-zygote-retire").start()
            return
    zygote.done.wait(30)
    zygote.close()


def _retire(zygote: GraderZygote) -> None:
    """Close ``zygote`` once none of its grades runs (each ends by its own deadline)."""
    while zygote.running():
        time.sleep(0.05)
    with _LOCK:
        if zygote not in _RETIRING:  # close_zygotes took it meanwhile
            return
        _RETIRING.discard(zygote)
    zygote.close()


class ZygoteForks(GraderForks):
    """The local backend's forking graders (:meth:`LocalBackend.grader_forks`): its zygotes."""

    def __init__(self, backend: LocalBackend) -> None:
        self.backend = backend

    def start(self, spec: SandboxSpec, argv: list[str], version: str) -> bool:
        return start_zygote(self.backend, spec, argv, version)

    def fork(self, spec: SandboxSpec, argv: list[str], version: str, grade_spec: SandboxSpec,
             deadline: float) -> ZygoteGrade | None:
        return fork_grade(self.backend, spec, argv, version, grade_spec, deadline)

    def close(self, spec: SandboxSpec, argv: list[str]) -> None:
        close_zygote(self.backend, spec, argv)

    def close_all(self) -> None:
        close_zygotes(self.backend)
