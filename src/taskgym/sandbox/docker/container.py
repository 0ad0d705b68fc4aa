"""One container: how it is created (the hardening), the persistent ``docker exec`` shell inside
it, host views of it (processes, cgroups), and its removal off the caller's path."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import platform
import select
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskgym.errors import SandboxError, SandboxLostError
from taskgym.sandbox.base import ResourceUsage
from taskgym.sandbox.docker.status_helper import HELPER_INSIDE, StatusListener, install_helper
from taskgym.sandbox.host.booting import JobThread
from taskgym.sandbox.host.cleanup import owner_alive
from taskgym.sandbox.host.procs import SANDBOX_UID, children, sandbox_processes, start_tick
from taskgym.sandbox.host.seccomp import DENIED_SYSCALLS
from taskgym.sandbox.host.tree import clear_tree
from taskgym.sandbox.shell.commands import (
    CONTROL_DIR,
    CONTROL_MB,
)
from taskgym.sandbox.shell.session import OUTPUT_NAMES

__all__ = ["KEEPER_UID", "LABEL", "OWNER_LABEL", "SHELL_ENV", "SHELL_PATH", "Container", "Shape", "Shell",
           "configured_path", "quote", "reap_containers", "removals_pending", "remove_later",
           "seccomp_profile"]

KEEPER_UID = 65534
"""The container's init and main process run as this other unprivileged user, so nothing the
sandbox user runs (``kill -9 -1``, a grader clearing the sandbox) can end the container."""


LABEL = "taskgym"


OWNER_LABEL = "taskgym.owner"


SHELL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


SHELL_ENV = {"PATH": SHELL_PATH, "HOME": "/tmp", "USER": "agent", "LOGNAME": "agent",
              "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "dumb"}


@dataclass(frozen=True)
class Shape:
    """What a container is created with; containers of one shape are interchangeable."""

    image: str
    workdir: str
    memory_mb: int
    pids: int
    cpus: float | None
    disk_mb: int
    tmp_mb: int
    writable_dirs: tuple[str, ...]
    stream_bytes: int
    """The size of each of the shell's output files' tmpfs (the spec's stream limit)."""
    hidden_dirs: tuple[tuple[str, int], ...] = ()
    """Root-owned read-only folders (path, size in MB), filled before the command runs."""


class Container:
    """One started container, its owner stream, and host views of it."""

    def __init__(self, api: Any, shape: Shape, owner: str) -> None:
        self.api = api
        self.shape = shape
        self._made_by = os.getpid()
        mb = 1 << 20
        tmpfs = {
            shape.workdir: f"size={shape.disk_mb * mb},uid={SANDBOX_UID},gid={SANDBOX_UID},"
                           "mode=0755,exec",
            "/tmp": f"size={shape.tmp_mb * mb},mode=1777,exec",
            CONTROL_DIR: f"size={CONTROL_MB * mb},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0700",
        }
        tmpfs[os.path.dirname(HELPER_INSIDE)] = "size=2m,mode=0755,exec"  # root's: filled below
        for name in OUTPUT_NAMES:  # each alone on a tmpfs, so a runaway command fills only it
            tmpfs[f"{CONTROL_DIR}/{os.path.dirname(name)}"] = (f"size={shape.stream_bytes},uid={SANDBOX_UID},"
                                            f"gid={SANDBOX_UID},mode=0700")
        for path in shape.writable_dirs:
            tmpfs[path] = f"size={shape.tmp_mb * mb},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755"
        for path, size in shape.hidden_dirs:
            tmpfs[path] = f"size={size * mb},mode=0755,exec"
        memory = shape.memory_mb * mb
        host_config = api.create_host_config(
            network_mode="none", cap_drop=["ALL"],
            security_opt=["no-new-privileges", f"seccomp={seccomp_profile()}"],
            pids_limit=shape.pids, mem_limit=memory, memswap_limit=memory, read_only=True,
            tmpfs=tmpfs, init=True, auto_remove=True, privileged=False,
            nano_cpus=None if shape.cpus is None else round(shape.cpus * 1e9))
        config = api.create_container_config(
            shape.image, command=["/bin/sh", "-c", "exec cat >/dev/null"],
            user=f"{KEEPER_UID}:{KEEPER_UID}", working_dir="/", hostname="sandbox",
            stdin_open=True, tty=False, network_disabled=True,
            labels={LABEL: "1", OWNER_LABEL: owner}, host_config=host_config)
        config["StdinOnce"] = True  # stdin closes when the owner's stream does
        created = api.create_container_from_config(config, None)
        self.id: str = created["Id"]
        try:
            # held until close: its end (even by this process's death) ends the container
            self._owner_stream = api.attach_socket(self.id, params={"stdin": 1, "stream": 1})
            api.start(self.id)
            info = api.inspect_container(self.id)
            self.path = configured_path(info["Config"].get("Env") or [])
            """The image's own ``PATH`` (its Dockerfile's ``ENV PATH``), which its shells get."""
            state = info["State"]
            self.pid: int = state["Pid"]
            self.pid_start = start_tick(self.pid)
            self.pidns = os.readlink(f"/proc/{self.pid}/ns/pid").removeprefix("pid:[")[:-1]
            self.root = f"/proc/{self.pid}/root"
            install_helper(self.root)
            self.cgroups = _cgroup_dirs(self.pid)
            deadline = time.monotonic() + 5
            while not (main := children(self.pid)) and time.monotonic() < deadline:
                time.sleep(0.001)  # docker-init forks the main process right after start
            if not main:
                raise SandboxError(f"container {self.id[:12]} started without its main process")
            # init and main, which stop() and timeouts spare; the agent's orphans are adopted
            # by init too, so these are told apart by the pids recorded now, not by parentage
            self.keep = {self.pid, *main}
            for pid in self.keep:  # the OOM killer takes the agent's processes, not these
                with contextlib.suppress(OSError):
                    Path(f"/proc/{pid}/oom_score_adj").write_text("-1000")
        except BaseException:
            self.close()
            raise

    def processes(self) -> list[tuple[int, int]]:
        """(host pid, start tick) of every process of the container but its init and main."""
        return [(pid, start) for pid, start in sandbox_processes(self.pidns)
                if pid not in self.keep]

    def kill_all(self) -> None:
        """SIGKILL every process but init and main, frozen first so none can fork away."""
        with contextlib.suppress(Exception):
            self.api.pause(self.id)
        try:
            for pid, _start in self.processes():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
        finally:
            self.thaw()
        deadline = time.monotonic() + 5
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.002)

    def thaw(self) -> None:
        """Unpause the container, retrying until the engine reports it running: a pause that
        failed or timed out on the client side can still complete in the engine afterwards."""
        deadline = time.monotonic() + 15
        unanswered: Exception | None = None
        while True:
            with contextlib.suppress(Exception):
                self.api.unpause(self.id)
            try:
                if not self.api.inspect_container(self.id)["State"]["Paused"]:
                    return
                unanswered = None
            except Exception as exc:  # the container is gone: nothing is left paused
                if getattr(getattr(exc, "response", None), "status_code", None) == 404:
                    return
                unanswered = exc
            if time.monotonic() > deadline:
                if unanswered is not None:  # nothing in a container can stop its engine
                    raise SandboxLostError(f"container {self.id[:12]} stays paused: the docker "
                                           f"engine does not answer ({unanswered}); check that "
                                           "it runs (`docker info`)") from unanswered
                raise SandboxError(f"container {self.id[:12]} stays paused")
            time.sleep(0.01)

    def clear_scratch(self) -> None:
        """Empty /tmp and /dev/shm, which a fresh local sandbox would also have empty."""
        for folder in ("/tmp", "/dev/shm"):
            try:
                fd = os.open(self.root + folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                with contextlib.suppress(OSError):
                    clear_tree(fd)  # any depth, links never followed
            finally:
                os.close(fd)

    def shell_env(self) -> dict[str, str]:
        """The environment a shell or command of this container starts with: :data:`SHELL_ENV`
        with the image's ``PATH``."""
        return {**SHELL_ENV, "PATH": self.path}

    def usage(self) -> ResourceUsage:
        usage = ResourceUsage()
        memory, cpu = self.cgroups
        for name in ("memory.max_usage_in_bytes", "memory.peak"):
            with contextlib.suppress(OSError, ValueError):
                usage.peak_memory_bytes = int((memory / name).read_text())
        with contextlib.suppress(OSError, ValueError):
            usage.cpu_sec = int((cpu / "cpuacct.usage").read_text()) / 1e9
        with contextlib.suppress(OSError, ValueError, IndexError):
            usage.cpu_sec = int((cpu / "cpu.stat").read_text().split()[1]) / 1e6
        return usage

    def close(self) -> None:
        """End the container: closing the owner stream ends its main process."""
        if os.getpid() != self._made_by:  # a forked child's copy: the container is the parent's
            return
        stream = getattr(self, "_owner_stream", None)
        if stream is not None:
            self._owner_stream = None
            _close_stream(stream)
            remove_later(self.api, self.id)


class Shell:
    """A ``docker exec -i`` bash: its input is the exec's stream, its stdout the status socket
    the helper connected (:mod:`taskgym.sandbox.docker.status_helper`), the connection's
    credentials give its host pid. :attr:`waiter` (an epoll descriptor) turns readable when a
    status line came or the shell ended."""

    def __init__(self, container: Container, env: dict[str, str]) -> None:
        api = container.api
        self.container = container
        self.status: socket.socket | None = None
        self.pidfd = -1
        self.waiter: select.epoll | None = None
        listener = StatusListener(container.root + CONTROL_DIR, CONTROL_DIR)
        try:
            self.exec_id = api.exec_create(
                container.id, [HELPER_INSIDE, listener.inside, "/bin/bash", "--norc",
                               "--noprofile", "-c", "exec 3<&0 </dev/null; "
                               "exec /bin/bash --norc --noprofile /dev/fd/3"],
                stdin=True, stdout=True, stderr=True, user=f"{SANDBOX_UID}:{SANDBOX_UID}",
                workdir=container.shape.workdir, environment=[f"{k}={v}" for k, v in env.items()],
            )["Id"]
            self.stream = api.exec_start(self.exec_id, socket=True)
            self.sock: socket.socket = _raw(self.stream)
            self.status, self.pid = listener.accept(30.0, self.sock.fileno())
            self.pidfd = os.pidfd_open(self.pid)
            self.waiter = select.epoll()
            self.waiter.register(self.status.fileno(), select.EPOLLIN)
            self.waiter.register(self.pidfd, select.EPOLLIN)
            self.sock.setblocking(False)
        except BaseException:
            self.close()
            raise
        finally:
            listener.close()

    def ended(self) -> bool:
        """Whether the shell's process has ended."""
        if self.pidfd < 0:
            return True
        poll = select.poll()
        poll.register(self.pidfd, select.POLLIN)
        return bool(poll.poll(0))

    def exit_code(self) -> int:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            info = self.container.api.exec_inspect(self.exec_id)
            if not info.get("Running"):
                code = info.get("ExitCode")
                return int(code) if code is not None else -1
            time.sleep(0.01)
        return -1

    def send(self, data: bytes) -> str:
        """Write ``data`` to the shell's input: ``""``, or ``"dead"`` when the stream is
        closed, or ``"hung"`` when it is full."""
        try:
            sent = self.sock.send(data)
        except BlockingIOError:
            return "hung"
        except OSError:
            return "dead"
        return "" if sent == len(data) else "hung"

    def close(self) -> None:
        if self.waiter is not None:
            self.waiter.close()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        if self.status is not None:
            self.status.close()
        if hasattr(self, "stream"):
            _close_stream(self.stream)


@functools.cache
def seccomp_profile() -> str:
    """The local backend's seccomp filter as a Docker profile (JSON).

    Everything is allowed but the deny list of :mod:`taskgym.sandbox.host.seccomp` (EPERM),
    ``clone3`` (ENOSYS, so libc falls back to ``clone``) and the TIOCSTI / TIOCLINUX
    ioctls; only the native architecture is listed, so a call of another ABI kills.
    """
    arch = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}[platform.machine()]
    rules: list[dict[str, Any]] = [
        {"names": sorted(DENIED_SYSCALLS), "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS},
    ]
    for request in (0x5412, 0x541C):  # TIOCSTI, TIOCLINUX
        rules.append({"names": ["ioctl"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                      "args": [{"index": 1, "value": request, "op": "SCMP_CMP_EQ"}]})
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "architectures": [arch],
                       "syscalls": rules})


# -- cleanup ------------------------------------------------------------------------------


def reap_containers(api: Any) -> list[str]:
    """Remove taskgym containers whose owning process (pid and start time) is gone."""
    removed = []
    for info in api.containers(all=True, filters={"label": f"{LABEL}=1"}):
        owner = info.get("Labels", {}).get(OWNER_LABEL, "")
        if not owner_alive(owner + "-x"):
            with contextlib.suppress(Exception):
                api.remove_container(info["Id"], force=True)
                removed.append(info["Id"])
    return removed


def _remove(job: tuple[Any, str]) -> None:
    api, container_id = job
    with contextlib.suppress(Exception):
        api.remove_container(container_id, force=True)


_REMOVER: JobThread[tuple[Any, str]] = JobThread("taskgym-docker-remover", _remove)
"""Removes closed containers; in a forked child it starts afresh (the parent's removals stay
the parent's)."""


def remove_later(api: Any, container_id: str) -> None:
    """Force-remove a closed container off the caller's path (it is already ending)."""
    _REMOVER.put((api, container_id))


def removals_pending() -> int:
    """Closed containers not yet removed by the background remover."""
    return _REMOVER.pending()


def configured_path(env: list[str]) -> str:
    """``PATH`` in a container's configured environment (``Config.Env``: the image's ``ENV``
    lines), else :data:`SHELL_PATH`."""
    found = [item.partition("=")[2] for item in env if item.startswith("PATH=")]
    return found[-1] if found and found[-1] else SHELL_PATH


def quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _raw(stream: Any) -> socket.socket:
    """The socket under what the Docker SDK returns for a hijacked connection."""
    sock = getattr(stream, "_sock", stream)
    return sock if isinstance(sock, socket.socket) else stream


def _close_stream(stream: Any) -> None:
    """Close a hijacked connection: the file object the SDK returned and its socket."""
    for item in (stream, _raw(stream)):
        with contextlib.suppress(OSError):
            item.close()


def _cgroup_dirs(pid: int) -> tuple[Path, Path]:
    """The memory and CPU accounting folders of the cgroup(s) of ``pid`` (v1 or v2)."""
    root = Path("/sys/fs/cgroup")
    memory = cpu = Path("/nonexistent")
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _num, controllers, path = line.split(":", 2)
            names = controllers.split(",")
            if controllers == "" and (root / "cgroup.controllers").exists():  # pure v2
                memory = cpu = root / path.lstrip("/")
            elif "memory" in names:
                memory = root / "memory" / path.lstrip("/")
            elif "cpuacct" in names:
                cpu = root / controllers / path.lstrip("/")
    return memory, cpu
