"""The local backend: bubblewrap sandboxes on this machine, shared per config, checked once;
sessions, pre-started sandboxes and one-shot runs (grading) on top of
:func:`~taskgym.sandbox.local.launch.launch`."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from taskgym.errors import SandboxLostError, SandboxUnavailableError
from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec
from taskgym.sandbox.config import LocalConfig
from taskgym.sandbox.host.cleanup import reap_once
from taskgym.sandbox.local.command_line import bwrap_argv, system_binds
from taskgym.sandbox.local.launch import (
    SHELL_NEEDS,
    SHELL_NOFILE,
    Launched,
    launch,
    raise_open_files_limit,
)
from taskgym.sandbox.shell.commands import output_cap_note
from taskgym.sandbox.shell.output import decode_capped, drain

if TYPE_CHECKING:
    from taskgym.sandbox.local.prestart import LocalPrestarted
    from taskgym.sandbox.local.session import LocalSession
    from taskgym.sandbox.local.zygote import ZygoteForks

__all__ = ["LocalBackend"]

_INSTALL_HINT = (
    "bubblewrap is not installed. Install it with `sudo apt-get install bubblewrap` "
    "(Debian/Ubuntu), `sudo dnf install bubblewrap` (Fedora) or `sudo pacman -S bubblewrap` (Arch), "
    "or pass sandbox='docker'."
)

_SHARED_LOCK = threading.Lock()
_SHARED: dict[LocalConfig, LocalBackend] = {}
_SHARED_PID = [0]


class LocalBackend(Backend):
    """Sandboxes made with bubblewrap on this machine; see the module docstring."""

    name = "local"
    config_class = LocalConfig

    def __init__(self, config: LocalConfig | None = None) -> None:
        config = config or LocalConfig()
        self.config = config
        self.warm_graders, self.warm_idle_sec = config.warm_graders, config.warm_idle_sec
        self.grader_zygote = config.grader_zygote
        """Whether warm grades are forked by grader zygotes (:mod:`taskgym.sandbox.local.zygote`)."""
        problem = self.check()
        if problem:
            raise SandboxUnavailableError(problem)
        self._bwrap = shutil.which("bwrap") or "bwrap"
        reap_once()
        soft = raise_open_files_limit()  # a sandbox may raise its own to the hard limit anyway
        if soft < SHELL_NOFILE:
            raise SandboxUnavailableError(
                f"RLIMIT_NOFILE is {soft} and cannot be raised (its hard limit): {SHELL_NEEDS}. "
                "Raise the hard limit before starting Python (`ulimit -Hn`, LimitNOFILE= of a "
                "systemd unit, /etc/security/limits.conf, docker run --ulimit nofile=...).")

    @classmethod
    def shared(cls, config: LocalConfig | None = None) -> LocalBackend:
        """One backend per config for the process (it is stateless past its check and its
        warm graders' settings): envs share it, so a thousand resets do not each probe
        bubblewrap."""
        config = config or LocalConfig()
        with _SHARED_LOCK:
            if _SHARED_PID[0] != os.getpid():
                _SHARED.clear()
                _SHARED_PID[0] = os.getpid()
            if config not in _SHARED:
                _SHARED[config] = cls(config)
            return _SHARED[config]

    def __deepcopy__(self, memo: dict[int, object]) -> LocalBackend:
        return self  # stateless past its check: shared (gymnasium copies make() arguments)

    def __reduce__(self) -> tuple[type[LocalBackend], tuple[LocalConfig]]:
        return LocalBackend, (self.config,)  # another process checks and sets up its own

    @classmethod
    def check(cls) -> str | None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return _INSTALL_HINT
        probe = subprocess.run(  # the system a sandbox sees, not "/" (see system_binds)
            [bwrap, "--unshare-all", *system_binds(), "--die-with-parent", "true"],
            capture_output=True, text=True, timeout=30,
        )
        if probe.returncode != 0:
            return (
                "bubblewrap cannot create namespaces here: "
                f"{probe.stderr.strip() or probe.returncode}. Unprivileged user namespaces may be "
                "disabled: enable them (`sudo sysctl kernel.unprivileged_userns_clone=1`, or on "
                "Ubuntu 24.04+ `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`), "
                "or pass sandbox='docker'."
            )
        return None

    def argv(self, spec: SandboxSpec, info_fd: int, block_fd: int, seccomp_fd: int,
             etc_fds: tuple[int, int], workspace: str | None = None,
             nested: bool = False) -> list[str]:
        """The bwrap command line for ``spec`` (:func:`~.command_line.bwrap_argv`)."""
        return bwrap_argv(self._bwrap, spec, info_fd, block_fd, seccomp_fd, etc_fds, workspace,
                          nested)

    def launch(
        self, spec: SandboxSpec, command: list[str], pass_fds: Sequence[int] = (),
        stdout: int | None = None, workspace: str | None = None, nested: bool = False,
    ) -> Launched:
        """:func:`~taskgym.sandbox.local.launch.launch` with this backend's bwrap."""
        return launch(self._bwrap, spec, command, pass_fds, stdout, workspace, nested)

    def grader_forks(self) -> ZygoteForks | None:
        """Its grader zygotes (:mod:`taskgym.sandbox.local.zygote`) when the config's
        ``grader_zygote`` is on, else ``None``."""
        from taskgym.sandbox.local.zygote import ZygoteForks

        return ZygoteForks(self) if self.grader_zygote else None

    def start(self, spec: SandboxSpec, seed: Path | None = None) -> LocalSession:
        from taskgym.sandbox.local.session import LocalSession

        return LocalSession(self, spec, seed)

    def prestart(self, spec: SandboxSpec, argv: list[str]) -> LocalPrestarted:
        from taskgym.sandbox.local.prestart import LocalPrestarted

        return LocalPrestarted(self, spec, argv)

    def run(self, spec: SandboxSpec, argv: list[str], seed: Path | None = None,
            timeout: float | None = None, pass_fds: Sequence[int] = ()
            ) -> tuple[ExecResult, ResourceUsage]:
        command = list(argv)
        if seed is not None:
            spec = spec.model_copy(update={"ro_binds": {**spec.ro_binds, str(seed): "/.seed"}})
            command = ["/bin/sh", "-c", 'cp -a /.seed/. "$0"/ && exec "$@"', spec.workdir, *argv]
        started = time.monotonic()
        launched = self.launch(spec, command, pass_fds)
        proc = launched.proc
        assert proc.stdout and proc.stderr
        limit = timeout if timeout is not None else spec.command_timeout_sec
        out, err, timed_out, runaway = drain(
            [proc.stdout.fileno(), proc.stderr.fileno()], started + limit, spec.stream_limit_bytes,
            launched.kill,
        )
        usage = launched.reap(grace=2.0)
        launched.close()
        code = proc.returncode if proc.returncode is not None else -1
        if code < 0 and not launched.killed:  # nothing inside can signal bwrap's outer process
            raise SandboxLostError(f"the sandbox was killed from outside (bwrap got signal "
                                   f"{-code}) after {time.monotonic() - started:.1f}s of "
                                   f"{argv[0]!r}; nothing it ran could have sent that signal")
        note = output_cap_note(spec.stream_limit_bytes) if runaway else ""
        result = ExecResult(
            stdout=decode_capped(out, spec.output_limit_bytes),
            stderr=decode_capped(err, spec.output_limit_bytes) + note,
            exit_code=code, duration_sec=time.monotonic() - started, timed_out=timed_out,
            truncated=runaway or len(out) > spec.output_limit_bytes
            or len(err) > spec.output_limit_bytes,
        )
        return result, usage

