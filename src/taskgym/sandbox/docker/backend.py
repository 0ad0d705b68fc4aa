"""The docker backend: images, starting sessions (warm or fresh), one-shot runs (grading) with
their descriptors relayed into the container, and the process-wide backends."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import threading
import time
import warnings
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from taskgym.errors import ConfigError, SandboxError, SandboxLostError, SandboxUnavailableError
from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec
from taskgym.sandbox.config import DockerConfig
from taskgym.sandbox.docker.container import (
    Container,
    Shape,
    Shell,
    quote,
    reap_containers,
    removals_pending,
)
from taskgym.sandbox.docker.engine import ENGINE_HINT, engine_client
from taskgym.sandbox.docker.images import (
    BASE_IMAGE,
    HOST_PYTHON_IMAGE,
    folder_image,
    image_exists,
    local_tag,
)
from taskgym.sandbox.docker.pool import Pool
from taskgym.sandbox.docker.prestart import DockerPrestarted
from taskgym.sandbox.docker.relay import FifoRelay, is_read_end, read_available
from taskgym.sandbox.docker.session import LIVE_SESSIONS, DockerSession
from taskgym.sandbox.docker.status_helper import helper_binary
from taskgym.sandbox.host import fs
from taskgym.sandbox.host.at_fork import at_fork
from taskgym.sandbox.host.cleanup import session_name
from taskgym.sandbox.host.procs import SANDBOX_UID, start_tick
from taskgym.sandbox.shell.commands import (
    CONTROL_DIR,
)

__all__ = ["LIVE_BACKENDS", "DockerBackend"]

def _owner() -> str:
    return session_name().rsplit("-", 1)[0]


class DockerBackend(Backend):
    """Sandboxes as hardened Docker containers; see the module docstring.

    Args:
        pool_size: started containers kept ready per container shape (``TASKGYM_DOCKER_POOL``,
            default 2; 0 starts every container on demand).
        config: the rest of its settings (warm graders); ``pool_size`` overrides the config's.
    """

    name = "docker"
    config_class = DockerConfig

    def __init__(self, pool_size: int | None = None, config: DockerConfig | None = None) -> None:
        config = config or DockerConfig()
        if pool_size is None:
            pool_size = config.pool_size
        self.config = config.model_copy(update={"pool_size": pool_size})
        self.warm_graders, self.warm_idle_sec = config.warm_graders, config.warm_idle_sec
        problem = self.check()
        if problem:
            raise SandboxUnavailableError(problem)
        self.client = engine_client()
        self.api = self.client.api
        self.owner = _owner()
        self._images: dict[str, str] = {}
        self.pool = Pool(self, pool_size)
        reap_containers(self.api)
        LIVE_BACKENDS.add(self)

    @classmethod
    def shared(cls, config: DockerConfig | None = None) -> DockerBackend:
        """The process's backend for ``config`` (what ``sandbox="docker"`` gives every env),
        so all envs of a process with one config share one engine client and warm pool."""
        config = config or DockerConfig()
        with _SHARED_LOCK:
            if config not in _SHARED:
                _SHARED[config] = cls(config=config)
            return _SHARED[config]

    def __deepcopy__(self, memo: dict[int, Any]) -> DockerBackend:
        return self  # a handle on the engine, shared (gymnasium copies make() arguments)

    def __reduce__(self) -> tuple[type[DockerBackend], tuple[int, DockerConfig]]:
        return DockerBackend, (self.pool.size, self.config)  # another process: its own client

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
            problem = f"no Docker engine is reachable ({exc}). {ENGINE_HINT}"
        if problem is not None:
            with warnings.catch_warnings():  # the SDK leaves the failed socket to the GC
                warnings.simplefilter("ignore", ResourceWarning)
                gc.collect()
            return problem
        if os.geteuid() != 0:
            return ("the docker backend reaches container workspaces through /proc and must run "
                    "as root (membership of the docker group is root-equivalent anyway)")
        try:
            helper_binary()
        except SandboxUnavailableError as exc:
            return str(exc)
        return None

    def image(self, spec: SandboxSpec) -> str:
        """The image tag for ``spec`` (a folder with a Dockerfile is built on first use;
        without an image, ``host_python`` asks for the image holding taskgym's Python; a
        ``taskgym/`` name is looked up in ``$TASKGYM_IMAGE_NAMESPACE``: ``images.local_tag``)."""
        wanted = spec.image or (HOST_PYTHON_IMAGE if spec.host_python else BASE_IMAGE)
        if wanted not in self._images:
            if wanted.startswith("/"):
                self._images[wanted] = folder_image(self.client, Path(wanted))
            elif image_exists(self.client, local_tag(wanted)):
                self._images[wanted] = local_tag(wanted)
            else:
                raise SandboxUnavailableError(
                    f"the image {local_tag(wanted)} is not built; run `taskgym images build"
                    f"{' ' + wanted.removeprefix('taskgym/') if wanted != BASE_IMAGE else ''}`")
        return self._images[wanted]

    def shape(self, spec: SandboxSpec, hidden: tuple[tuple[str, int], ...] = ()) -> Shape:
        if not spec.workdir.startswith("/") or spec.workdir in ("/", "/usr", "/tmp", "/proc"):
            raise ConfigError(f"workdir must be a fresh absolute path, not {spec.workdir!r}")
        return Shape(self.image(spec), spec.workdir, spec.memory_mb, spec.pids, spec.cpus, spec.disk_mb,
                     spec.tmp_mb, tuple(spec.writable_dirs), spec.stream_limit_bytes, hidden)

    def prepare(self, shape: Shape) -> tuple[Container, Shell]:
        """Start a container of ``shape`` and open its shell (what the pool holds)."""
        container = Container(self.api, shape, self.owner)
        try:
            return container, Shell(container, container.shell_env())
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
        container = self.hidden_container(spec)
        try:
            shell = Shell(container, container.shell_env())
        except BaseException:
            container.close()
            raise
        return DockerSession(self, spec, (container, shell), seed)

    def prestart(self, spec: SandboxSpec, argv: list[str]) -> DockerPrestarted:
        return DockerPrestarted(self, spec, argv)

    def hidden_container(self, spec: SandboxSpec) -> Container:
        """A new container (never from the pool) with ``ro_binds`` copied into root-owned
        folders the sandbox user can read but not change."""
        hidden = []
        for host_path, inside in spec.ro_binds.items():
            if not Path(host_path).is_dir():
                raise ConfigError(f"read-only folder {host_path} does not exist (the docker "
                                  "backend copies folders, not single files)")
            hidden.append((inside, max(16, 2 * _tree_size(Path(host_path)) // (1 << 20) + 1)))
        container = Container(self.api, self.shape(spec, tuple(hidden)), self.owner)
        try:
            for host_path, inside in spec.ro_binds.items():
                fd = os.open(container.root + inside, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    fs.copy_in(Path(host_path), fd)
                finally:
                    os.close(fd)
        except BaseException:
            container.close()
            raise
        return container

    def run(self, spec: SandboxSpec, argv: list[str], seed: Path | None = None,
            timeout: float | None = None, pass_fds: Sequence[int] = ()
            ) -> tuple[ExecResult, ResourceUsage]:
        """A fresh container, as :meth:`start` makes for ``ro_binds``. ``pass_fds`` are relayed:
        an fd open for reading (or a regular file open for reading and writing) is copied from
        its offset into a file the command opens under the same number (then deleted), one
        open for writing becomes a FIFO drained into the host fd while the command runs."""
        session = self._fresh(spec, seed)
        container = session._container
        relays: list[FifoRelay] = []
        try:
            opens = []
            control = container.root + CONTROL_DIR
            for number in pass_fds:
                path = f"{CONTROL_DIR}/fd{number}"
                if is_read_end(number):
                    data = read_available(number)
                    with open(f"{control}/fd{number}", "wb") as fh:
                        fh.write(data)
                    os.chown(f"{control}/fd{number}", SANDBOX_UID, SANDBOX_UID)
                    opens.append(f"{number}<{path}")
                else:
                    relays.append(FifoRelay(f"{control}/fd{number}", number))
                    opens.append(f"{number}>{path}")
            command = " ".join(quote(arg) for arg in argv)
            if opens:
                files = " ".join(f"{CONTROL_DIR}/fd{n}" for n in pass_fds)
                command = f"exec {' '.join(opens)}; rm -f {files}; exec {command}"
            try:
                result = session.exec(f"( {command} )", timeout)
            except SandboxError as exc:
                _check_alive(container, argv[0], exc)
                raise
            _check_alive(container, argv[0])
            usage = container.usage()
        finally:
            session.close()
            for relay in relays:
                relay.finish()
        return result, usage

    def image_workspace(self, spec: SandboxSpec, seed: Path | None) -> Path:
        """The working folder of ``spec``'s image with ``seed`` over it
        (:mod:`taskgym.sandbox.docker.workspace`)."""
        from taskgym.sandbox.docker.workspace import image_workspace

        return image_workspace(self, spec, seed)

    def close(self) -> None:
        """Drain the warm pool (sessions are closed by their owners)."""
        self.pool.drain()


def _check_alive(container: Container, what: str, cause: Exception | None = None) -> None:
    """Raise :class:`SandboxLostError` when ``container``'s init is gone: killed from outside,
    as nothing in it could do (init is the keeper's, not the sandbox user's)."""
    if start_tick(container.pid) != container.pid_start:
        raise SandboxLostError(f"container {container.id[:12]} was killed from outside while "
                               f"running {what!r}; nothing it ran could have") from cause


_SHARED: dict[DockerConfig, DockerBackend] = {}


_SHARED_LOCK = threading.Lock()


LIVE_BACKENDS: weakref.WeakSet[DockerBackend] = weakref.WeakSet()


def _forget_parent_in_child() -> None:
    """In a forked child (``os.fork``, multiprocessing's ``fork``, so AsyncVectorEnv's workers):
    the parent's warm pool is neither taken from (two processes would drive one container:
    two episodes in one sandbox) nor drained (its sessions and containers close only in the
    parent anyway); each backend the child inherited gets an engine client (the parent's
    connections are not shared), an owner and a pool of its own, and ``sandbox="docker"``
    makes the child's own shared backend."""
    _SHARED.clear()
    for backend in list(LIVE_BACKENDS):
        backend.client = engine_client()
        backend.api = backend.client.api
        backend.owner = _owner()
        backend.pool = Pool(backend, backend.pool.size)
    _SHARED_LOCK.release()


at_fork(before=_SHARED_LOCK.acquire, after_in_parent=_SHARED_LOCK.release,
        after_in_child=_forget_parent_in_child)


@atexit.register
def _close_all() -> None:
    """Close what a program forgot and wait for the removals, so its exit leaves nothing."""
    for session in list(LIVE_SESSIONS):
        with contextlib.suppress(Exception):
            session.close()
    for backend in list(LIVE_BACKENDS):
        with contextlib.suppress(Exception):
            backend.close()
    deadline = time.monotonic() + 30
    while removals_pending() and time.monotonic() < deadline:
        time.sleep(0.01)


def _tree_size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*"))
