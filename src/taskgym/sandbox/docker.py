"""The container backend: hardened Docker containers around a persistent shell.

Each session is one long-lived container: no network, every capability dropped,
no-new-privileges, the local backend's seccomp deny list, a pids limit, a memory limit with
no extra swap, a read-only root with size-capped tmpfs for the workspace, ``/tmp`` and the
control folder, ``docker-init`` as pid 1, uid 1000; never privileged, no host path mounted.

The container's main process only waits for end-of-file on its stdin, which this process
holds open through an attach stream (``stdin_once``): when this process dies, even by
SIGKILL, the stream closes, the container exits and the engine removes it. Commands travel
through one ``docker exec -i`` bash kept open for the episode, with the local backend's
command encoding (:mod:`taskgym.sandbox._commands`: short commands ride the trigger line;
longer ones are sourced from a file on the control tmpfs); the end of each command is
marked in the output streams themselves. A warm pool per container shape holds started
containers with their shell already open, so ``start()`` pays no container start.

The engine must run on this machine and taskgym as root: files move in and out of the
workspace through ``/proc/<container pid>/root`` by file descriptor (never following a
link, exactly as locally; ``docker cp`` cannot reach a tmpfs), and a timed-out command's
processes are found by pid namespace and start time, as locally.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import gc
import json
import os
import platform
import queue
import select
import shutil
import socket
import stat
import sys
import threading
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskgym.errors import ConfigError, SandboxError, SandboxUnavailableError
from taskgym.sandbox import _fs
from taskgym.sandbox._commands import (
    BAD_STATUS_NOTE,
    CONTROL_DIR,
    CONTROL_MB,
    STATUS_MAX,
    BadStatus,
    CommandFile,
    encode_text,
    output_cap_note,
)
from taskgym.sandbox._seccomp import DENIED_SYSCALLS
from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec, Session
from taskgym.sandbox.cleanup import owner_alive, session_name
from taskgym.sandbox.config import DockerConfig
from taskgym.sandbox.docker_images import (
    BASE_IMAGE,
    HOST_PYTHON_IMAGE,
    folder_image,
    image_exists,
)
from taskgym.sandbox.output import decode_capped
from taskgym.sandbox.procs import SANDBOX_UID, children, sandbox_processes, start_tick, ticks_at

__all__ = ["DockerBackend", "DockerSession"]

KEEPER_UID = 65534
"""The container's init and main process run as this other unprivileged user, so nothing the
sandbox user runs (``kill -9 -1``, a grader clearing the sandbox) can end the container."""
LABEL = "taskgym"
OWNER_LABEL = "taskgym.owner"
_POOLED_SHAPES = 4
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SHELL_ENV = {"PATH": _PATH, "HOME": "/tmp", "USER": "agent", "LOGNAME": "agent",
              "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "dumb"}
_ENGINE_HINT = (
    "Install an engine (`sudo apt-get install -y docker.io`) and start it (`sudo dockerd "
    "--bridge=none --iptables=false --ip-forward=false &`, or `sudo systemctl start docker`), "
    "then build the images with `taskgym images build`.")


def _owner() -> str:
    return session_name().rsplit("-", 1)[0]


@dataclass(frozen=True)
class _Shape:
    """What a container is created with; containers of one shape are interchangeable."""

    image: str
    workdir: str
    memory_mb: int
    pids: int
    cpus: float | None
    disk_mb: int
    tmp_mb: int
    writable_dirs: tuple[str, ...]
    hidden_dirs: tuple[tuple[str, int], ...] = ()
    """Root-owned read-only folders (path, size in MB), filled before the command runs."""


class _Container:
    """One started container, its owner stream, and host views of it."""

    def __init__(self, api: Any, shape: _Shape, owner: str) -> None:
        self.api = api
        self.shape = shape
        mb = 1 << 20
        tmpfs = {
            shape.workdir: f"size={shape.disk_mb * mb},uid={SANDBOX_UID},gid={SANDBOX_UID},"
                           "mode=0755,exec",
            "/tmp": f"size={shape.tmp_mb * mb},mode=1777,exec",
            CONTROL_DIR: f"size={CONTROL_MB * mb},uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0700",
        }
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
            state = api.inspect_container(self.id)["State"]
            self.pid: int = state["Pid"]
            self.pid_start = start_tick(self.pid)
            self.pidns = os.readlink(f"/proc/{self.pid}/ns/pid").removeprefix("pid:[")[:-1]
            self.root = f"/proc/{self.pid}/root"
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
            with contextlib.suppress(Exception):
                self.api.unpause(self.id)
        deadline = time.monotonic() + 5
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.002)

    def clear_scratch(self) -> None:
        """Empty /tmp and /dev/shm, which a fresh local sandbox would also have empty."""
        for folder in ("/tmp", "/dev/shm"):
            try:
                fd = os.open(self.root + folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                for name in os.listdir(fd):
                    try:
                        shutil.rmtree(name, dir_fd=fd)
                    except NotADirectoryError:
                        os.unlink(name, dir_fd=fd)
                    except OSError:  # a link: rmtree never follows one
                        with contextlib.suppress(OSError):
                            os.unlink(name, dir_fd=fd)
            finally:
                os.close(fd)

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
        stream = getattr(self, "_owner_stream", None)
        if stream is not None:
            self._owner_stream = None
            _close_stream(stream)
            _remove_later(self.api, self.id)


class _Shell:
    """A ``docker exec -i`` bash speaking the marker protocol over its multiplexed stream."""

    def __init__(self, container: _Container, env: dict[str, str]) -> None:
        api = container.api
        self.container = container
        self.exec_id = api.exec_create(
            container.id, ["/bin/bash", "--norc", "--noprofile", "-c",
                           "exec 3<&0 </dev/null; exec /bin/bash --norc --noprofile /dev/fd/3"],
            stdin=True, stdout=True, stderr=True, user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            workdir=container.shape.workdir, environment=[f"{k}={v}" for k, v in env.items()],
        )["Id"]
        self.stream = api.exec_start(self.exec_id, socket=True)
        self.sock: socket.socket = _raw(self.stream)
        self.sock.setblocking(False)
        self.poll = select.poll()
        self.poll.register(self.sock, select.POLLIN)
        self.pending = bytearray()
        self.dead = False
        self.pid = 0

    def find_pid(self) -> None:
        self.pid = int(self.container.api.exec_inspect(self.exec_id).get("Pid") or 0)

    def exit_code(self) -> int:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            info = self.container.api.exec_inspect(self.exec_id)
            if not info.get("Running"):
                code = info.get("ExitCode")
                return int(code) if code is not None else -1
            time.sleep(0.01)
        return -1

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def read(self, out: bytearray, err: bytearray, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds and add what arrived; False once the stream ended."""
        if not self.poll.poll(max(0.0, timeout) * 1000.0):
            return True
        try:
            chunk = self.sock.recv(262144)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.dead = True
            return False
        buf = self.pending
        buf += chunk
        pos = 0
        while len(buf) - pos >= 8:  # frames: stream byte, 3 zero bytes, big-endian size
            size = int.from_bytes(buf[pos + 4 : pos + 8], "big")
            if len(buf) - pos - 8 < size:
                break
            (out if buf[pos] == 1 else err).extend(buf[pos + 8 : pos + 8 + size])
            pos += 8 + size
        del buf[:pos]
        return True

    def close(self) -> None:
        _close_stream(self.stream)


class _Pool:
    """Started containers with their shell open, per shape; refilled in the background.

    Up to ``size`` containers for each of the :data:`_POOLED_SHAPES` most recently started
    shapes (a task set whose tasks differ in limits has several); an older shape's
    containers are closed when a new one comes in.
    """

    def __init__(self, backend: DockerBackend, size: int) -> None:
        self.backend = backend
        self.size = size
        self.ready: OrderedDict[_Shape, list[tuple[_Container, _Shell]]] = OrderedDict()
        self.lock = threading.Lock()
        self.wanted: queue.Queue[_Shape | None] = queue.Queue()
        self.worker: threading.Thread | None = None
        self.closed = False

    def take(self, shape: _Shape) -> tuple[_Container, _Shell] | None:
        evicted: list[tuple[_Container, _Shell]] = []
        with self.lock:
            items = self.ready.setdefault(shape, [])
            self.ready.move_to_end(shape)
            item = items.pop() if items else None
            while len(self.ready) > _POOLED_SHAPES:
                evicted += self.ready.popitem(last=False)[1]
        _close_items(evicted)
        if self.size > 0 and not self.closed:
            self.wanted.put(shape)
            if self.worker is None:
                self.worker = threading.Thread(target=self._fill, daemon=True,
                                               name="taskgym-docker-pool")
                self.worker.start()
        return item

    def _fill(self) -> None:
        while (shape := self.wanted.get()) is not None:
            while not self.closed:
                with self.lock:
                    if shape not in self.ready or len(self.ready[shape]) >= self.size:
                        break  # evicted meanwhile, or full
                try:
                    item = self.backend.prepare(shape)
                except Exception:
                    break
                with self.lock:
                    keep = not self.closed and shape in self.ready
                    if keep:
                        self.ready[shape].append(item)
                if not keep:
                    _close_items([item])
                    break

    def drain(self) -> None:
        self.closed = True
        self.wanted.put(None)
        with self.lock:
            items = [item for items in self.ready.values() for item in items]
            self.ready.clear()
        _close_items(items)
        if self.worker is not None:
            self.worker.join(timeout=30)


def _close_items(items: list[tuple[_Container, _Shell]]) -> None:
    for container, shell in items:
        shell.close()
        container.close()


class DockerBackend(Backend):
    """Sandboxes as hardened Docker containers; see the module docstring.

    Args:
        pool_size: started containers kept ready per container shape (``TASKGYM_DOCKER_POOL``,
            default 2; 0 starts every container on demand).
    """

    name = "docker"

    def __init__(self, pool_size: int | None = None) -> None:
        if pool_size is None:
            pool_size = DockerConfig().pool_size
        problem = self.check()
        if problem:
            raise SandboxUnavailableError(problem)
        import docker

        self.client = docker.from_env(timeout=120)
        self.api = self.client.api
        self.owner = _owner()
        self._images: dict[str, str] = {}
        self.pool = _Pool(self, pool_size)
        reap_containers(self.api)
        _BACKENDS.add(self)

    @classmethod
    def shared(cls, config: DockerConfig | None = None) -> DockerBackend:
        """The process's backend for ``config`` (what ``sandbox="docker"`` gives every env),
        so all envs of a process with one config share one engine client and warm pool."""
        config = config or DockerConfig()
        with _SHARED_LOCK:
            if config not in _SHARED:
                _SHARED[config] = cls(config.pool_size)
            return _SHARED[config]

    def __deepcopy__(self, memo: dict[int, Any]) -> DockerBackend:
        return self  # a handle on the engine, shared (gymnasium copies make() arguments)

    def __reduce__(self) -> tuple[type[DockerBackend], tuple[int]]:
        return DockerBackend, (self.pool.size,)  # another process gets its own engine client

    @classmethod
    def check(cls) -> str | None:
        try:
            import docker
        except ImportError:
            return "the Docker SDK is missing: `pip install 'taskgym[docker]'` (or `pip install docker`)"
        problem = None
        try:
            client = docker.from_env(timeout=10)
            try:
                client.ping()
            finally:
                client.close()
        except Exception as exc:
            problem = f"no Docker engine is reachable ({exc}). {_ENGINE_HINT}"
        if problem is not None:
            with warnings.catch_warnings():  # the SDK leaves the failed socket to the GC
                warnings.simplefilter("ignore", ResourceWarning)
                gc.collect()
            return problem
        if os.geteuid() != 0:
            return ("the docker backend reaches container workspaces through /proc and must run "
                    "as root (membership of the docker group is root-equivalent anyway)")
        return None

    def image(self, spec: SandboxSpec) -> str:
        """The image tag for ``spec`` (a folder with a Dockerfile is built on first use;
        without an image, ``host_python`` asks for the image holding taskgym's Python)."""
        wanted = spec.image or (HOST_PYTHON_IMAGE if spec.host_python else BASE_IMAGE)
        if wanted not in self._images:
            if wanted.startswith("/"):
                self._images[wanted] = folder_image(self.client, Path(wanted))
            elif image_exists(self.client, wanted):
                self._images[wanted] = wanted
            else:
                raise SandboxUnavailableError(
                    f"the image {wanted} is not built; run `taskgym images build"
                    f"{' ' + wanted.removeprefix('taskgym/') if wanted != BASE_IMAGE else ''}`")
        return self._images[wanted]

    def shape(self, spec: SandboxSpec, hidden: tuple[tuple[str, int], ...] = ()) -> _Shape:
        if not spec.workdir.startswith("/") or spec.workdir in ("/", "/usr", "/tmp", "/proc"):
            raise ConfigError(f"workdir must be a fresh absolute path, not {spec.workdir!r}")
        return _Shape(self.image(spec), spec.workdir, spec.memory_mb, spec.pids, spec.cpus, spec.disk_mb,
                      spec.tmp_mb, tuple(spec.writable_dirs), hidden)

    def prepare(self, shape: _Shape) -> tuple[_Container, _Shell]:
        """Start a container of ``shape`` and open its shell (what the pool holds)."""
        container = _Container(self.api, shape, self.owner)
        try:
            return container, _Shell(container, dict(_SHELL_ENV))
        except BaseException:
            container.close()
            raise

    def start(self, spec: SandboxSpec, seed: Path | None = None) -> DockerSession:
        if spec.ro_binds:
            return self._fresh(spec, seed)
        shape = self.shape(spec)
        item = self.pool.take(shape)
        if item is not None:
            try:
                return DockerSession(self, spec, item, seed)
            except (SandboxError, OSError):
                pass  # the pooled container died while waiting: start a new one
        return DockerSession(self, spec, self.prepare(shape), seed)

    def _fresh(self, spec: SandboxSpec, seed: Path | None) -> DockerSession:
        """A session in a new container (never from the pool) with ``ro_binds`` copied into
        root-owned folders the sandbox user can read but not change."""
        hidden = []
        for host_path, inside in spec.ro_binds.items():
            if not Path(host_path).is_dir():
                raise ConfigError(f"read-only folder {host_path} does not exist (the docker "
                                  "backend copies folders, not single files)")
            hidden.append((inside, max(16, 2 * _tree_size(Path(host_path)) // (1 << 20) + 1)))
        container, shell = self.prepare(self.shape(spec, tuple(hidden)))
        try:
            for host_path, inside in spec.ro_binds.items():
                fd = os.open(container.root + inside, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    _fs.copy_in(Path(host_path), fd)
                finally:
                    os.close(fd)
        except BaseException:
            shell.close()
            container.close()
            raise
        return DockerSession(self, spec, (container, shell), seed)

    def run(
        self,
        spec: SandboxSpec,
        argv: list[str],
        seed: Path | None = None,
        timeout: float | None = None,
        pass_fds: Sequence[int] = (),
    ) -> tuple[ExecResult, ResourceUsage]:
        """A fresh container, as :meth:`start` makes for ``ro_binds``. ``pass_fds`` are relayed:
        an fd open for reading (or a regular file open for reading and writing) is copied from
        its offset into a file the command opens under the same number (then deleted), one
        open for writing becomes a FIFO drained into the host fd while the command runs."""
        session = self._fresh(spec, seed)
        container = session._container
        relays: list[_FifoRelay] = []
        try:
            opens = []
            control = container.root + CONTROL_DIR
            for number in pass_fds:
                path = f"{CONTROL_DIR}/fd{number}"
                if _is_read_end(number):
                    data = _read_available(number)
                    with open(f"{control}/fd{number}", "wb") as fh:
                        fh.write(data)
                    os.chown(f"{control}/fd{number}", SANDBOX_UID, SANDBOX_UID)
                    opens.append(f"{number}<{path}")
                else:
                    relays.append(_FifoRelay(f"{control}/fd{number}", number))
                    opens.append(f"{number}>{path}")
            command = " ".join(_quote(arg) for arg in argv)
            if opens:
                files = " ".join(f"{CONTROL_DIR}/fd{n}" for n in pass_fds)
                command = f"exec {' '.join(opens)}; rm -f {files}; exec {command}"
            result = session.exec(f"( {command} )", timeout)
            usage = container.usage()
        finally:
            session.close()
            for relay in relays:
                relay.finish()
        return result, usage

    def close(self) -> None:
        """Drain the warm pool (sessions are closed by their owners)."""
        self.pool.drain()


class DockerSession(_fs.WorkspaceFiles, Session):
    """A container with a persistent bash; see :class:`taskgym.sandbox.Session`."""

    limits_enforced_by = "cgroup"

    def __init__(self, backend: DockerBackend, spec: SandboxSpec,
                 item: tuple[_Container, _Shell], seed: Path | None) -> None:
        self.spec = spec
        self.cpu_limited = spec.cpus is not None  # the container's nano_cpus quota
        self._backend = backend
        self._container, self._shell = item
        self._shell_open: _Shell | None = self._shell
        self._lock = threading.Lock()
        self._tag = b"__TG_" + os.urandom(8).hex().encode()
        self._marker = b"\n" + self._tag
        self._root_fd = -1
        self._cmd_fd = -1
        self._commands = CommandFile(-1)
        self._usage = ResourceUsage()
        try:
            self._root_fd = os.open(self._container.root + spec.workdir,
                                    os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            control = os.open(self._container.root + CONTROL_DIR,
                              os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self._cmd_fd = os.open("cmd", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644,
                                       dir_fd=control)
                self._commands = CommandFile(self._cmd_fd)
            finally:
                os.close(control)
            if seed is not None:
                _fs.copy_in(seed, self._root_fd)
                _own_tree(self._root_fd)
            self._bootstrap()
        except BaseException:
            self.close()
            raise
        _LIVE.add(self)

    def _bootstrap(self) -> None:
        tag = self._tag.decode()
        env = dict(self.spec.env)
        if self.spec.host_python and not self.spec.image:  # as locally: that python3 first
            env.setdefault("PATH", f"{Path(sys.executable).parent}:{_PATH}")
        exports = "".join(f"export {key}={_quote(value)}\n" for key, value in env.items())
        # markers carry a sequence number, so a marker a command forged (or an earlier
        # command's) is told from this command's; the control pipe's inherited descriptor is
        # closed (bash reads its close-on-exec copy), so no command can read the protocol
        script = (
            "exec 3<&-\n"
            f"__tgm() {{ printf '\\n{tag}%d %d\\n' \"$1\" \"$2\"; printf '\\n{tag}%d\\n' \"$2\" >&2; }}\n"
            "__ts() { __tgm \"$?\" \"$1\"; }\n"  # a trigger ends with __ts <sequence number>
            "readonly -f __tgm __ts\n"
            f"set +o history; unset HISTFILE; umask 022; cd {_quote(self.spec.workdir)}\n"
            f"{exports}true; __ts 1\n"
        )
        self._seq = 1
        ready = self._send(encode_text(script, "the shell's environment"), 30.0)
        if ready.exit_code != 0 or ready.restarted:
            raise SandboxError(f"the container shell did not start: {ready.stderr}")
        self._shell.find_pid()

    # -- life cycle -------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._shell_open is not None and not self._shell.dead

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._shell_open is not None:
            self._usage = self._container.usage()
            self._container.kill_all()
            self._shell.close()
            self._shell_open = None

    def _restart(self) -> None:
        """Replace a dead or hung shell; the workspace stays, processes do not."""
        self._stop()
        self._container.clear_scratch()
        self._shell = _Shell(self._container, dict(_SHELL_ENV))
        self._shell_open = self._shell
        self._bootstrap()

    def usage(self) -> ResourceUsage:
        if self._shell_open is None:
            return ResourceUsage(self._usage.cpu_sec, self._usage.peak_memory_bytes)
        return self._container.usage()

    def close(self) -> None:
        for attr in ("_root_fd", "_cmd_fd"):
            fd = getattr(self, attr)
            if fd >= 0:
                os.close(fd)
                setattr(self, attr, -1)
        if self._shell_open is not None:
            self._shell.close()
            self._shell_open = None
        self._container.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- files ------------------------------------------------------------------------
    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        super().write_file(path, data, mode)
        _own_path(self._root(), _fs.relative_parts(path, self.spec.workdir))

    # -- commands ---------------------------------------------------------------------
    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        limit = timeout if timeout is not None else self.spec.command_timeout_sec
        with self._lock:
            if self._shell_open is None:
                raise SandboxError("the session is stopped")
            self._seq += 1
            return self._send(self._commands.trigger(command, self._seq), limit, killable=True)

    def _send(self, script: bytes, timeout: float, killable: bool = False) -> ExecResult:
        """Write ``script`` and collect output up to the markers on stdout and stderr."""
        started = time.monotonic()
        deadline = started + timeout
        shell = self._shell
        out, err = bytearray(), bytearray()
        code = -1
        timed_out = runaway = hung = False
        out_done = err_done = bad_status = False
        give_up: float | None = None
        limit = self.spec.stream_limit_bytes
        alive = shell.send(script)
        while alive and not (out_done and err_done):
            now = time.monotonic()
            wait_until = give_up if give_up is not None else deadline
            if now >= wait_until:
                if give_up is not None or not killable:
                    hung = True
                    break
                timed_out = True
                self._kill_started(started)
                give_up = now + 2.0
                continue
            out_len, err_len = len(out), len(err)
            alive = shell.read(out, err, wait_until - now)
            try:
                if not out_done and len(out) > out_len:
                    found = self._find_marker(out, out_len, self._marker, with_status=True)
                    if found is not None:
                        idx, code = found
                        del out[idx:]
                        out_done = True
                if not err_done and len(err) > err_len:
                    found = self._find_marker(err, err_len, self._marker, with_status=False)
                    if found is not None:
                        del err[found[0]:]
                        err_done = True
            except BadStatus:  # the agent's doing: a fresh shell, as for a hung one
                bad_status = hung = True
                break
            for buf in (out, err):
                if len(buf) > limit:  # runaway output: keep the head and the recent tail
                    keep = limit // 2
                    del buf[keep : len(buf) - keep]
                    if not runaway and killable:
                        runaway = True
                        self._kill_started(started)
        dead = not alive
        if dead:
            code = shell.exit_code()
        if (dead or hung) and killable:
            self._restart()
        cap = self.spec.output_limit_bytes
        note = output_cap_note(limit) if runaway else ""
        if bad_status:
            note += BAD_STATUS_NOTE
        return ExecResult(
            stdout=decode_capped(out, cap), stderr=decode_capped(err, cap) + note,
            exit_code=124 if timed_out else -1 if bad_status else code,
            duration_sec=time.monotonic() - started, timed_out=timed_out,
            truncated=runaway or len(out) > cap or len(err) > cap, restarted=dead or hung)

    def _find_marker(self, buf: bytearray, old_len: int, marker: bytes,
                     with_status: bool) -> tuple[int, int] | None:
        """Where this command's marker starts in ``buf`` and the status it carries, once its
        line is whole: ``marker``, then (``with_status``) the exit status and a space, then
        this command's sequence number. ``old_len``: how much of ``buf`` was searched before.
        Raises :class:`BadStatus` for a marker line of any other shape. (What follows the
        marker is dropped: background jobs may print after it.)"""
        idx = buf.find(marker, max(0, old_len - len(marker) - STATUS_MAX))
        if idx < 0:
            return None
        begin = idx + len(marker)
        end = buf.find(b"\n", begin, begin + STATUS_MAX)
        if end < 0:
            if len(buf) - begin >= STATUS_MAX:
                raise BadStatus(bytes(buf[idx:begin + STATUS_MAX]))
            return None
        line = bytes(buf[begin:end])
        code, space, seq = line.partition(b" ") if with_status else (b"0", b" ", line)
        if seq != b"%d" % self._seq or not space or not code.isdigit() or len(code) > 3:
            raise BadStatus(line)
        return idx, int(code)

    def _kill_started(self, since: float) -> None:
        """SIGKILL every process of the container started at or after ``since``."""
        since_tick = ticks_at(since)
        for pid, start in self._container.processes():
            if pid != self._shell.pid and start >= since_tick:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)


@functools.cache
def seccomp_profile() -> str:
    """The local backend's seccomp filter as a Docker profile (JSON).

    Everything is allowed but the deny list of :mod:`taskgym.sandbox._seccomp` (EPERM),
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


_SHARED: dict[DockerConfig, DockerBackend] = {}
_SHARED_LOCK = threading.Lock()
_REMOVER: queue.Queue[tuple[Any, str]] = queue.Queue()
_remover_started = False


def _remove_later(api: Any, container_id: str) -> None:
    """Force-remove a closed container off the caller's path (it is already ending)."""
    global _remover_started
    with _SHARED_LOCK:
        if not _remover_started:
            _remover_started = True
            threading.Thread(target=_remove_loop, daemon=True,
                             name="taskgym-docker-remover").start()
    _REMOVER.put((api, container_id))


def _remove_loop() -> None:
    while True:
        api, container_id = _REMOVER.get()
        with contextlib.suppress(Exception):
            api.remove_container(container_id, force=True)
        _REMOVER.task_done()


_LIVE: weakref.WeakSet[DockerSession] = weakref.WeakSet()
_BACKENDS: weakref.WeakSet[DockerBackend] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Close what a program forgot and wait for the removals, so its exit leaves nothing."""
    for session in list(_LIVE):
        with contextlib.suppress(Exception):
            session.close()
    for backend in list(_BACKENDS):
        with contextlib.suppress(Exception):
            backend.close()
    deadline = time.monotonic() + 30
    while _REMOVER.unfinished_tasks and time.monotonic() < deadline:
        time.sleep(0.01)


# -- helpers ------------------------------------------------------------------------------
class _FifoRelay:
    """Copies what the container writes into a FIFO to a host fd, while it runs."""

    def __init__(self, path: str, host_fd: int) -> None:
        os.mkfifo(path, 0o600)
        os.chown(path, SANDBOX_UID, SANDBOX_UID)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self.host_fd = host_fd
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._copy, daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        poll = select.poll()
        poll.register(self.fd, select.POLLIN)
        while True:
            finishing = self.done.is_set()
            poll.poll(50)
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                chunk = b""
            if chunk:
                with contextlib.suppress(OSError):
                    os.write(self.host_fd, chunk)
            elif finishing:
                break
            else:
                time.sleep(0.005)  # no writer yet, or between writes
        os.close(self.fd)

    def finish(self) -> None:
        self.done.set()
        self.thread.join(timeout=10)


def _is_read_end(fd: int) -> bool:
    """Whether the command reads ``fd``: open read-only, or a regular file open for both."""
    import fcntl

    mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    return mode == os.O_RDONLY or (mode == os.O_RDWR and stat.S_ISREG(os.fstat(fd).st_mode))


def _read_available(fd: int) -> bytes:
    """What can be read from ``fd`` now, without waiting."""
    chunks = []
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    while poll.poll(0):
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _quote(text: str) -> str:
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


def _tree_size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*"))


def _own_tree(root_fd: int) -> None:
    """Give the sandbox user everything under ``root_fd`` (copied in by root)."""
    for _dirpath, dirnames, filenames, dfd in os.fwalk(".", dir_fd=root_fd, follow_symlinks=False):
        for name in (*dirnames, *filenames):
            os.chown(name, SANDBOX_UID, SANDBOX_UID, dir_fd=dfd, follow_symlinks=False)


def _own_path(root_fd: int, parts: list[str]) -> None:
    """Give the sandbox user each folder along ``parts`` and the file at its end."""
    fd = os.dup(root_fd)
    try:
        for index, part in enumerate(parts):
            os.chown(part, SANDBOX_UID, SANDBOX_UID, dir_fd=fd, follow_symlinks=False)
            if index < len(parts) - 1:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=fd)
                os.close(fd)
                fd = nxt
    finally:
        os.close(fd)

