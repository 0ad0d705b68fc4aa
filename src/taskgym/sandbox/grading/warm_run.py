"""Running one grade in a warm grader (:mod:`taskgym.sandbox.grading.warm`): one forked by the
backend's forking grader of its kind (:mod:`taskgym.sandbox.grading.forks`), or taken from the
pool (one started on the spot when none is ready); the workspace copied in, the go message
with its descriptors, the output collected.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from taskgym.errors import SandboxError
from taskgym.sandbox.base import Backend, ExecResult, Prestarted, ResourceUsage, SandboxSpec
from taskgym.sandbox.grading.warm import Entry, get_pool, stub_command
from taskgym.sandbox.grading.warm_leases import wanted
from taskgym.sandbox.shell.output import decode_capped

__all__ = ["run_warm"]


def run_warm(backend: Backend, spec: SandboxSpec, argv: Sequence[str], preload: Sequence[str], *,
             seed: Path | None, timeout: float, fds: Mapping[str, int]
             ) -> tuple[ExecResult, ResourceUsage, str]:
    """Run ``argv`` in a grade forked by the backend's :meth:`~Backend.grader_forks` (local:
    the kind's zygote) or else in a pre-started grader (one started now when none is ready):
    copy ``seed`` in, send ``spec.env`` and the descriptors ``fds`` (name -> host descriptor; the script finds
    each number in the variable of that name), collect its output, destroy it. The third
    value says which ran: ``zygote`` or ``pool``."""
    began = time.monotonic()
    deadline = began + timeout
    stub_spec, command = stub_command(spec, argv, preload)
    pool = get_pool(backend, stub_spec, command)
    version = pool.version()
    forks = backend.grader_forks()
    started = None if forks is None else forks.fork(stub_spec, command, version, spec, deadline)
    path = "pool" if started is None else "zygote"
    entry = pool.take(version) if started is None else None
    if entry is not None:
        with contextlib.suppress(SandboxError):
            started = entry.claim(deadline)
    if started is None:  # none ready: start one on the spot, the same way
        entry = Entry(version)
        entry.boot(backend, stub_spec, command, deadline - time.monotonic())
        started = entry.claim(deadline)
    try:
        result, usage = _go(started, spec, seed, deadline, fds, began)
    except OSError as exc:  # the workspace past the grader's disk cap, a grader gone meanwhile
        raise SandboxError(f"could not hand the grade to the pre-started grader: {exc}") from exc
    finally:
        started.close()
        if path == "pool":
            pool.refill(wanted(pool))
    return result, usage, path


def _go(started: Prestarted, spec: SandboxSpec, seed: Path | None, deadline: float,
        fds: Mapping[str, int], began: float) -> tuple[ExecResult, ResourceUsage]:
    if seed is not None:
        started.copy_in(seed)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    readers = [_Reader(out_r, spec.stream_limit_bytes), _Reader(err_r, spec.stream_limit_bytes)]
    try:
        message = json.dumps({"env": dict(spec.env), "fds": ["stdout", "stderr", *fds]}).encode()
        started.channel.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                             array.array("i", [out_w, err_w, *fds.values()]))])
    finally:
        os.close(out_w)
        os.close(err_w)
    started.channel.close()
    code, timed_out, usage = started.finish(deadline - time.monotonic())
    out, err = (reader.result() for reader in readers)
    cap = spec.output_limit_bytes
    result = ExecResult(stdout=decode_capped(out, cap), stderr=decode_capped(err, cap),
                        exit_code=124 if timed_out else code,
                        duration_sec=time.monotonic() - began, timed_out=timed_out,
                        truncated=len(out) > cap or len(err) > cap)
    return result, usage


class _Reader:
    """Reads a pipe to its end in a thread, keeping ``limit`` bytes."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.data = bytearray()
        self.thread = threading.Thread(target=self._read, daemon=True, name="taskgym-warm-output")
        self.thread.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                if len(self.data) < self.limit:
                    self.data += chunk[: self.limit - len(self.data)]
        finally:
            os.close(self.fd)

    def result(self) -> bytes:
        self.thread.join(timeout=10)
        return bytes(self.data)
