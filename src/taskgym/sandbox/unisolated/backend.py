"""The unisolated backend (see :mod:`taskgym.sandbox.unisolated`): its config, sessions and
one-shot runs as plain subprocesses in temp folders, and the conformance checks it skips."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec
from taskgym.sandbox.config import BackendConfig
from taskgym.sandbox.host import fs
from taskgym.sandbox.shell.commands import output_cap_note
from taskgym.sandbox.shell.output import decode_capped, drain
from taskgym.sandbox.unisolated.session import UnisolatedSession, host_env, refuse_mounts

__all__ = ["SKIPPED_CHECKS", "UnisolatedBackend", "UnisolatedConfig"]

_NO_WORKDIR = "the workspace is a host temp folder, not spec.workdir (no mount namespace)"
_NO_LIMITS = "no limits: commands run as plain processes of this user"
_NO_ISOLATION = "no isolation: commands see this machine as this process does"

SKIPPED_CHECKS: dict[str, str] = {
    "shell_state_persists": _NO_WORKDIR + "; the state itself persists (tests/sandbox)",
    "shell_exit_recovers": _NO_WORKDIR + "; the recovery itself is tested (tests/sandbox)",
    "timeout_kills_what_the_command_started": "its `ps -eo args` lists every host process, past the "
                                              "output cap; the kill itself is tested (tests/sandbox)",
    "killing_every_process_recovers": "kill -9 -1 would signal every process of this user, "
                                      "the caller included",
    "memory_limit": _NO_LIMITS, "process_limit": _NO_LIMITS, "cpu_quota": _NO_LIMITS,
    "disk_cap": _NO_LIMITS,
    "filesystem_is_minimal_and_read_only": _NO_ISOLATION,
    "identity_and_privileges": _NO_ISOLATION,
    "network_is_loopback_only": _NO_ISOLATION,
    "processes_are_private": _NO_ISOLATION,
    "sessions_are_isolated": _NO_ISOLATION,
    "controller_secrets_do_not_reach_the_sandbox": _NO_ISOLATION,
}
"""The conformance checks (:mod:`taskgym.sandbox.conformance`) this backend does not pass, by
name, with the reason: everything else it passes."""


class UnisolatedConfig(BackendConfig):
    """The unisolated backend: nothing to set."""

    type: Literal["unisolated"] = "unisolated"


class UnisolatedBackend(Backend):
    """Plain ``bash`` sessions in host temp folders; **not a sandbox** (see the package)."""

    name = "unisolated"
    config_class = UnisolatedConfig
    warm_graders = 0

    def __init__(self, config: UnisolatedConfig | None = None) -> None:
        self.config = config or UnisolatedConfig()

    @classmethod
    def check(cls) -> str | None:
        return None if shutil.which("bash") else "bash is not installed"

    def start(self, spec: SandboxSpec, seed: Path | None = None) -> UnisolatedSession:
        return UnisolatedSession(spec, seed)

    def run(self, spec: SandboxSpec, argv: list[str], seed: Path | None = None,
            timeout: float | None = None, pass_fds: Sequence[int] = ()
            ) -> tuple[ExecResult, ResourceUsage]:
        refuse_mounts(spec)
        with tempfile.TemporaryDirectory(prefix="taskgym-unisolated-run-") as folder:
            if seed is not None:
                root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    fs.copy_in(seed, root)
                finally:
                    os.close(root)
            started = time.monotonic()
            proc = subprocess.Popen(argv, cwd=folder, env=host_env(spec, folder),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, pass_fds=tuple(pass_fds),
                                    start_new_session=True)
            assert proc.stdout is not None and proc.stderr is not None

            def kill() -> None:
                os.killpg(proc.pid, signal.SIGKILL)

            limit = timeout if timeout is not None else spec.command_timeout_sec
            out, err, timed_out, runaway = drain(
                [proc.stdout.fileno(), proc.stderr.fileno()], started + limit,
                spec.stream_limit_bytes, kill)
            _pid, status, rusage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            proc.stdout.close()
            proc.stderr.close()
            if not timed_out:  # what it left in the background goes with the run
                try:
                    kill()
                except ProcessLookupError:
                    pass
        cap = spec.output_limit_bytes
        result = ExecResult(
            stdout=decode_capped(out, cap),
            stderr=decode_capped(err, cap) + (output_cap_note(spec.stream_limit_bytes) if runaway else ""),
            exit_code=proc.returncode, duration_sec=time.monotonic() - started,
            timed_out=timed_out, truncated=runaway or len(out) > cap or len(err) > cap)
        return result, ResourceUsage(cpu_sec=rusage.ru_utime + rusage.ru_stime,
                                     peak_memory_bytes=rusage.ru_maxrss * 1024)
