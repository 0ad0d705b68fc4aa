"""The sandbox contract: a backend (where things run) and a session (what you do there).

A :class:`Backend` owns the isolation (bubblewrap namespaces, a container). It starts
:class:`Session` objects, each a private workspace with one persistent shell, and runs
one-shot commands for grading. Every backend passes the same conformance suite
(:mod:`taskgym.sandbox.conformance`).
"""

from __future__ import annotations

import abc
import functools
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from taskgym.errors import ConfigError, SandboxError
from taskgym.sandbox.host.blocking import run_blocking
from taskgym.sandbox.host.os_errors import guard_class

if TYPE_CHECKING:
    from taskgym.sandbox.config import BackendConfig
    from taskgym.sandbox.grading.forks import GraderForks
    from taskgym.sandbox.shell.plans import Plan
    from taskgym.sandbox.snapshots.session_snapshot import SessionSnapshot
    from taskgym.sandbox.snapshots.spares import Spares


__all__ = ["CONCURRENT_AEXEC", "Backend", "ExecResult", "Prestarted", "ResourceUsage", "SandboxSpec",
           "Session"]

CONCURRENT_AEXEC = (
    "aexec was called on a session whose previous command is still running; a session runs "
    "one command at a time: await each aexec before the next (use one session, or one env, "
    "per concurrent episode)")


class SandboxSpec(BaseModel):
    """What a sandbox must look like; every backend honours every field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workdir: str = "/app"
    """Absolute path of the private writable workspace inside the sandbox."""
    memory_mb: int = Field(default=1024, ge=16)
    """Memory limit for every process of the sandbox together."""
    pids: int = Field(default=256, ge=8)
    """Maximum number of processes and threads alive at once."""
    cpus: float | None = Field(default=None, gt=0, le=1024)
    """CPU cores the sandbox's processes may use together (a CFS quota: cgroup ``cpu.max`` or
    ``cpu.cfs_quota_us``, docker ``nano_cpus``); ``None``: no CPU limit."""
    disk_mb: int = Field(default=512, ge=1)
    """Size cap of the workspace."""
    tmp_mb: int = Field(default=256, ge=1)
    """Size cap of /tmp."""
    command_timeout_sec: float = Field(default=60.0, gt=0)
    """Default deadline of one command; what the command started is killed after it."""
    output_limit_bytes: int = Field(default=16_384, ge=256)
    """Bytes of stdout and of stderr kept for the observation (head and tail)."""
    stream_limit_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    """Bytes a single command may print before it is stopped as runaway output."""
    env: Mapping[str, str] = Field(default_factory=dict)
    """Extra environment variables for the shell."""
    writable_dirs: tuple[str, ...] = ()
    """Extra empty writable folders (tmpfs, each capped at ``tmp_mb``), e.g. /logs for graders."""
    ro_binds: Mapping[str, str] = Field(default_factory=dict)
    """Extra read-only mounts, host path -> sandbox path (e.g. hidden tests, only when grading)."""
    host_python: bool = False
    """Make the Python that runs taskgym, with the packages installed beside it (CadQuery,
    pdfplumber...), the sandbox's ``python3``. The local backend binds that installation
    read-only with taskgym's own package hidden; the docker backend, when ``image`` is not
    set, uses the ``taskgym/host-python`` image, which holds a copy of that installation."""
    image: str | None = None
    """Container image for container backends: a tag (``taskgym/coding-terminal-v0``), or
    the absolute path of a folder holding a Dockerfile (built on first use, cached by a
    hash of the folder). ``None``: the backend's base image. The local backend ignores it."""


@dataclass(slots=True)
class ExecResult:
    """Outcome of one command."""

    stdout: str
    stderr: str
    exit_code: int
    duration_sec: float
    timed_out: bool = False
    truncated: bool = False
    """Output was cut for length (see :attr:`SandboxSpec.output_limit_bytes`)."""
    restarted: bool = False
    """The shell died or hung and a fresh one was started (cwd, variables and jobs are lost)."""


@dataclass(slots=True)
class ResourceUsage:
    """Resources a session (or a one-shot run) has used so far."""

    cpu_sec: float = 0.0
    peak_memory_bytes: int = 0


class Session(abc.ABC):
    """One running sandbox: a workspace and a persistent shell.

    Safe to use from one thread at a time; sessions are independent of each other,
    so many threads may each drive their own. :meth:`aexec` is the same for coroutines: one
    command of a session at a time (a second ``aexec`` while one runs raises
    :class:`~taskgym.errors.SandboxError`), any number of sessions at once on one loop.
    """

    spec: SandboxSpec
    limits_enforced_by: str = "cgroup"
    """``"cgroup"`` (exact, for the sandbox as a whole) or ``"rlimit"`` (per process, and
    the process count per user: approximate), whichever this machine allowed."""
    cpu_limited: bool = False
    """Whether :attr:`SandboxSpec.cpus` is enforced: a cgroup with the cpu controller, or
    the container's quota. The rlimit fallback has no CPU quota."""
    workspace_storage: str = "tmpfs"
    """Where the workspace lives: ``"tmpfs"`` (capped at ``disk_mb``; snapshots and forks copy
    its bytes) or ``"btrfs"`` (a local sandbox's capped subvolume on the runtime root's btrfs:
    snapshots and forks clone its files, see :mod:`taskgym.sandbox.snapshots.disk`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every backend's public methods raise :class:`SandboxError` subclasses, never a bare
        ``OSError`` (:func:`~taskgym.sandbox.host.os_errors.guard`)."""
        super().__init_subclass__(**kwargs)
        guard_class(cls, ("exec", "aexec", "exec_plan", "read_file", "write_file", "open_fifo",
                          "export_workspace", "stop", "usage", "close", "snapshot", "restore"))

    @abc.abstractmethod
    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run a shell command in the persistent shell (cwd and variables persist).

        A command that fails, times out or kills the shell is a result, not an error
        (``exit_code``, ``timed_out``, ``restarted``). Raises :class:`SandboxError` when the
        session is stopped or closed, or the host runs out of descriptors, processes or
        memory; :class:`SandboxTextError` when ``command`` holds a NUL or a lone surrogate."""

    async def aexec(self, command: str, timeout: float | None = None) -> ExecResult:
        """:meth:`exec` for asyncio: the same result, awaited without blocking the loop.

        This default runs :meth:`exec` in the bounded shared pool
        (:mod:`taskgym.sandbox.host.blocking`); a backend whose shell the loop can drive
        overrides it (the local and docker sessions do, with no thread at all).
        """
        if not self._async_guard.acquire(blocking=False):
            raise SandboxError(CONCURRENT_AEXEC)
        try:
            return await run_blocking(self.exec, command, timeout)
        finally:
            self._async_guard.release()

    def exec_plan(self, command: str, timeout: float | None = None) -> Plan[ExecResult]:
        """:meth:`exec` as a plan (:mod:`taskgym.sandbox.shell.plans`), for a driver that runs many
        at once in one thread (a vector env's sub-steps): the same result.

        This default yields one blocking :meth:`exec`, which the driver runs in the bounded
        pool; a backend whose shell can be waited on overrides it (the local and docker
        sessions yield waits on the shell's status socket).
        """
        result: ExecResult = yield functools.partial(self.exec, command, timeout)
        return result

    @functools.cached_property
    def _async_guard(self) -> threading.Lock:
        return threading.Lock()

    @abc.abstractmethod
    def read_file(self, path: str, limit: int | None = None) -> bytes:
        """Read a regular file of the workspace (up to ``limit`` bytes); never follows a link
        or leaves it.

        Raises :class:`SandboxPathError` for a path it refuses (outside the workspace, ``..``,
        through a link, not a regular file), :class:`SandboxFileError` when the file cannot be
        read (no such file, no permission), :class:`SandboxTextError` for a NUL or lone
        surrogate in ``path``, :class:`SandboxError` once the session is closed."""

    @abc.abstractmethod
    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Create or replace a file of the workspace, making parent folders.

        Raises as :meth:`read_file` does; :class:`SandboxFileError` also when the workspace
        is full (its ``disk_mb`` cap)."""

    def open_fifo(self, path: str, write: bool) -> int:
        """Open a FIFO of the workspace, for writing or for reading, without blocking: the
        host's end of a channel to a process in the sandbox that made it. The descriptor is
        non-blocking and close-on-exec; the caller closes it. Never follows a link, and never
        opens anything but a FIFO (the path is checked before it is opened).

        Raises as :meth:`read_file` does (:class:`SandboxPathError` also for a path that is
        not a FIFO); :class:`SandboxFileError` when the FIFO is opened for writing and nothing
        holds it open for reading."""
        raise SandboxError(f"{type(self).__name__} has no FIFOs in its workspace")

    @abc.abstractmethod
    def export_workspace(self, dest: Path) -> None:
        """Copy the workspace into ``dest`` (links copied as links, never followed).

        Raises :class:`SandboxFileError` when ``dest`` cannot be written (it exists, no
        space, no permission), :class:`SandboxError` once the session is closed."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Kill every process of the sandbox; the workspace stays readable for export.

        Raises :class:`SandboxError` only when the host fails to kill or reap them."""

    @abc.abstractmethod
    def usage(self) -> ResourceUsage:
        """CPU time and peak memory used so far. Raises :class:`SandboxError` when the
        accounting (cgroup or container stats) cannot be read."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release everything: processes, mounts, cgroups, temporary folders. Idempotent.
        Raises :class:`SandboxError` only when the host fails to release them."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool:
        """Whether the sandbox's processes are still running."""

    def snapshot(self) -> SessionSnapshot:
        """Save the workspace and the shell's state (see :mod:`taskgym.sandbox.snapshots.session_snapshot`).

        The workspace (files, modes, links, empty folders, times) is copied into a private
        host folder that no sandbox can see; the shell's variables, functions, aliases,
        options, umask and cwd are captured by a command run in the shell. Processes left
        running in the background are listed in the snapshot's ``background`` and are
        **not** carried by a restore. Raises :class:`~taskgym.errors.SandboxError` when the
        session is stopped or closed, when the shell cannot report its state (the agent broke
        it, it is over :data:`~taskgym.sandbox.snapshots.session_snapshot.SHELL_STATE_MAX`),
        or the copy fails.
        """
        raise SandboxError(f"{type(self).__name__} does not support snapshots")

    def exec_apart(self, command: str, timeout: float) -> ExecResult:
        """Run ``command`` where nothing the agent left in the session can reach it (its shell
        functions, aliases, traps, background processes): the shell's state is captured, every
        process killed, ``command`` run by a fresh shell, and the state sourced back. For
        commands the host trusts the outcome of, such as a multi-step task's ``setup.sh``.
        Background processes are not carried, as in :meth:`restore`."""
        raise SandboxError(f"{type(self).__name__} cannot run a command apart from its shell")

    def restore(self, snap: SessionSnapshot) -> None:
        """Make this session what ``snap`` saved: every process is killed and a fresh shell
        started, the workspace emptied and refilled from the snapshot, the shell state
        sourced. ``snap`` is unchanged and may be restored again. Raises
        :class:`~taskgym.errors.SandboxError` when the session is closed or the copy fails
        (a workspace too small for the snapshot, for instance)."""
        raise SandboxError(f"{type(self).__name__} does not support snapshots")

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Prestarted(abc.ABC):
    """One command started ahead of time in a fresh sandbox with an empty workspace, holding a
    unix SEQPACKET socket to the host (:attr:`channel`): what a warm grader waits in (see
    :mod:`taskgym.sandbox.grading.warm`). It runs once: :meth:`finish` destroys the sandbox."""

    channel: socket.socket
    """The host's end; the command finds its own in ``TASKGYM_WARM_FD`` (an inherited
    descriptor) or ``TASKGYM_WARM_SOCKET`` (a path to connect to)."""

    @abc.abstractmethod
    def copy_in(self, seed: Path) -> None:
        """Copy the folder ``seed`` into the (empty) workspace, owned by the sandbox user."""

    @abc.abstractmethod
    def finish(self, timeout: float) -> tuple[int, bool, ResourceUsage]:
        """Wait up to ``timeout`` seconds for the command to exit (killing it then), destroy
        the sandbox and everything in it: (exit status, timed out, resources used)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Destroy the sandbox unused. Idempotent."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool:
        """Whether the command still runs."""


class Backend(abc.ABC):
    """Where sandboxes run: owns isolation, limits and cleanup."""

    name: str
    """Its name in the ``taskgym.backends`` entry-point group (:mod:`taskgym.sandbox.backends`)."""
    config_class: ClassVar[type[BackendConfig]]
    """Its config (:class:`~taskgym.sandbox.config.BackendConfig` with ``type`` its name)."""
    warm_graders: int | None = None
    """Most pre-started graders kept waiting per kind (:mod:`taskgym.sandbox.grading.warm`); set from
    the backend's config (``None``: the configs' default, ``TASKGYM_WARM_GRADERS`` or the CPU
    count; 0: warm graders off)."""
    warm_idle_sec: float = 60.0
    """How long a waiting grader no live episode counts on is kept without use."""

    @classmethod
    @abc.abstractmethod
    def check(cls) -> str | None:
        """``None`` when usable here, else what is missing and how to install it."""

    @classmethod
    def from_config(cls, config: BackendConfig) -> Backend:
        """The backend for ``config`` (:func:`~taskgym.sandbox.config.get_backend`), which
        must be a :attr:`config_class`: :meth:`shared`."""
        if not isinstance(config, cls.config_class):
            raise ConfigError(f"the {cls.name} backend takes a {cls.config_class.__name__}, "
                              f"not {config!r}")
        return cls.shared(config)

    @classmethod
    def shared(cls, config: Any = None) -> Backend:
        """The backend for ``config`` in this process: a new one by default (``cls(config)``);
        the local and docker backends share one per config."""
        return cls(config)  # type: ignore[call-arg]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``start`` and ``run`` raise :class:`SandboxError` subclasses, never ``OSError``."""
        super().__init_subclass__(**kwargs)
        guard_class(cls, ("start", "run", "fork", "prestart"))

    @abc.abstractmethod
    def start(self, spec: SandboxSpec, seed: Path | None = None) -> Session:
        """Start a session whose workspace holds a copy of the folder ``seed``.

        Raises :class:`SandboxUnavailableError` when the backend cannot run here,
        :class:`SandboxError` when the sandbox cannot be made (descriptors, processes or
        memory run out: the message names the limit), :class:`SandboxFileError` when
        ``seed`` cannot be copied in, :class:`ConfigError` for a spec it cannot honour."""

    def fork(self, snap: SessionSnapshot, spares: Spares | None = None) -> Session:
        """Start a new session that holds what ``snap`` saved (``snap.spec``, its workspace
        and shell state): :meth:`start` (or a started, unused session of ``spares``:
        :mod:`taskgym.sandbox.snapshots.spares`) then a restore into the fresh shell. The child is
        independent of the session the snapshot came from. Raises
        :class:`~taskgym.errors.SandboxError` as :meth:`start` and :meth:`Session.restore`."""
        from taskgym.sandbox.snapshots.session_snapshot import SnapshotSupport

        session = spares.take(snap.spec) if spares is not None else None
        if session is None:
            session = self.start(snap.spec)
        if not isinstance(session, SnapshotSupport):
            session.close()
            raise SandboxError(f"the {self.name} backend does not support snapshots")
        try:
            session.adopt(snap)
        except BaseException:
            session.close()
            raise
        return session

    @abc.abstractmethod
    def run(self, spec: SandboxSpec, argv: list[str], seed: Path | None = None,
            timeout: float | None = None, pass_fds: Sequence[int] = ()
            ) -> tuple[ExecResult, ResourceUsage]:
        """Run one command in a fresh sandbox seeded from ``seed``, then destroy it.

        ``pass_fds`` are host file descriptors the command inherits under the same
        numbers: channels it reports through (grading results) that nothing else holds.
        Raises as :meth:`start` does; the command failing or timing out is a result.
        """

    def prestart(self, spec: SandboxSpec, argv: list[str]) -> Prestarted:
        """Start ``argv`` in a fresh sandbox of ``spec`` with an empty workspace, to be given
        its workspace later (:class:`Prestarted`). Backends without it raise
        ``NotImplementedError``."""
        raise NotImplementedError(f"the {self.name} backend cannot pre-start sandboxes")

    def grader_forks(self) -> GraderForks | None:
        """This backend's way to fork warm grades from a grader that imported its libraries
        once (:mod:`taskgym.sandbox.grading.forks`), or ``None`` (the default): warm grades
        come from the pool of :meth:`prestart` sandboxes."""
        return None

    def image_workspace(self, spec: SandboxSpec, seed: Path | None) -> Path | None:
        """The start state of a workspace in ``spec.image`` when that image has a working
        folder of its own: a host folder holding it with ``seed`` copied over it. ``None``
        (the default) for a backend that runs no images: the workspace is ``seed`` alone."""
        return None
