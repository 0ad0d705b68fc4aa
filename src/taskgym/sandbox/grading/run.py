"""The grading runner every domain's verifier uses: one fresh sandbox per grade.

:func:`run_grader` starts a new sandbox seeded with a copy of the final workspace (never the
agent's own sandbox, whose processes are gone by then), hands the grader its secrets by
descriptor, and collects what it reports over a pipe, keeping only lines tagged with a
per-run nonce. The grader learns the nonce from another descriptor, so nothing that ran
before the grade could have known it; the sandbox, and every process left in it, is
destroyed when the grader exits. A sandbox that fails before the grader reported
``{"phase": "started"}`` raises :class:`~taskgym.errors.NoVerdictError` (the policy's work was
not reached: see :mod:`taskgym.core.verdicts`).

Inside the sandbox the grader finds, in its environment:

- ``TASKGYM_NONCE_FD``: a descriptor to read the nonce from (read it first, then close it);
- ``TASKGYM_REPORT_FD``: the report pipe: each line ``<nonce> <JSON object>``;
- one variable per secret (e.g. ``TASKGYM_SECRET_FD``): a descriptor of an unlinked file
  holding it, which the grader should read and close before running anything of the agent's.
"""

from __future__ import annotations

import json
import os
import secrets as random
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgym.errors import (
    HostResourceError,
    NoVerdictError,
    SandboxError,
    SandboxFileError,
    SandboxLostError,
    SandboxPathError,
    SandboxTextError,
)
from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec
from taskgym.sandbox.grading.warm import pool_size
from taskgym.sandbox.grading.warm_run import run_warm
from taskgym.sandbox.host.cleanup import runtime_root
from taskgym.sandbox.host.os_errors import sandbox_error

__all__ = ["Grader", "GraderRun", "REPORT_LIMIT", "run_grader"]

REPORT_LIMIT = 4 << 20
"""Bytes of report read from one grade; the rest is discarded (a grader is not chatty)."""


@dataclass
class GraderRun:
    """What one grade in a fresh sandbox gave back."""

    result: ExecResult
    """The grader's exit status and output (a diagnostic: never trusted as a result)."""
    usage: ResourceUsage
    records: list[dict[str, Any]] = field(default_factory=list)
    """The nonce-tagged JSON objects the grader reported, in order."""
    rejected: list[tuple[int, str]] = field(default_factory=list)
    """Each line that was no such record (untagged, not a JSON object, cut short, past
    :data:`REPORT_LIMIT`): how many records came before it, and why (quoting nothing of it)."""
    path: str = "cold"
    """Where it ran: ``cold`` (a sandbox started for it), ``pool`` (a pre-started one) or
    ``zygote`` (forked by the kind's grader zygote); see :mod:`taskgym.sandbox.grading.warm`."""

    def final(self, key: str = "final") -> dict[str, Any] | None:
        """The first record whose ``key`` is true, else ``None``."""
        return next((r for r in self.records if r.get(key)), None)

    def costs(self) -> dict[str, float | str]:
        """Its wall-clock and CPU seconds and :attr:`path`, as a reward's details."""
        return {"verifier_seconds": round(self.result.duration_sec, 3),
                "verifier_cpu_seconds": round(self.usage.cpu_sec, 3), "grader_path": self.path}

    def log(self, limit: int = 4000) -> str:
        """The tail of the grader's output, for the reward's details."""
        return (self.result.stdout + self.result.stderr)[-limit:]


@dataclass(frozen=True)
class Grader:
    """A domain's grader for a task: the sandbox, the command and the modules it imports
    first. What :meth:`run` grades with is what an env's reset pre-starts
    (:attr:`taskgym.core.env.TaskEnv.grader`)."""

    spec: SandboxSpec
    argv: tuple[str, ...]
    preload: tuple[str, ...] | None = None

    def run(self, backend: Backend, *, seed: Path | None, timeout: float,
            secrets: Mapping[str, bytes] | None = None) -> GraderRun:
        """:func:`run_grader` with this grader."""
        return run_grader(backend, self.spec, list(self.argv), seed=seed, timeout=timeout,
                          secrets=secrets, preload=self.preload)


def run_grader(backend: Backend, spec: SandboxSpec, argv: list[str], *, seed: Path | None,
               timeout: float, secrets: Mapping[str, bytes] | None = None,
               pass_fds: Sequence[int] = (), preload: Sequence[str] | None = None) -> GraderRun:
    """Run ``argv`` in a fresh sandbox of ``spec`` seeded from ``seed`` and collect its report.

    ``secrets`` maps an environment variable name to bytes the grader may read from the
    descriptor that variable names; they never exist as a file in any sandbox.

    ``preload``: modules the grader script (``argv`` is ``python3 [options] SCRIPT ...``)
    imports, to be imported ahead of time in a pre-started, single-use sandbox
    (:mod:`taskgym.sandbox.grading.warm`); ``None``, ``pass_fds``, a backend whose ``warm_graders``
    is 0 or that cannot pre-start: the sandbox is started for this grade, with the command.
    """
    nonce = random.token_hex(16)
    records: list[dict[str, Any]] = []
    rejected: list[tuple[int, str]] = []
    opened: list[int] = []
    try:
        return _run(backend, spec, argv, nonce, (records, rejected), opened, seed=seed,
                    timeout=timeout, secrets=secrets, pass_fds=pass_fds, preload=preload)
    except OSError as exc:  # the host's pipes, descriptors or threads, before the sandbox's
        raise sandbox_error("could not set up the grade", exc) from exc
    finally:
        for fd in opened:
            os.close(fd)


def _run(backend: Backend, spec: SandboxSpec, argv: list[str], nonce: str,
         report: tuple[list[dict[str, Any]], list[tuple[int, str]]], opened: list[int], *,
         seed: Path | None, timeout: float,
         secrets: Mapping[str, bytes] | None, pass_fds: Sequence[int],
         preload: Sequence[str] | None) -> GraderRun:
    """:func:`run_grader`'s body; ``report`` the lists of records and rejected lines it fills,
    ``opened`` the descriptors the caller closes."""
    records, rejected = report
    nonce_r, nonce_w = os.pipe()
    opened += [nonce_r, nonce_w]
    os.write(nonce_w, nonce.encode())
    os.close(nonce_w)
    opened.remove(nonce_w)
    report_r, report_w = os.pipe()
    opened += [report_r, report_w]
    env = {"TASKGYM_NONCE_FD": str(nonce_r), "TASKGYM_REPORT_FD": str(report_w)}
    for name, content in (secrets or {}).items():
        fd = _secret_descriptor(content)
        opened.append(fd)
        env[name] = str(fd)
    reader = threading.Thread(target=_collect, args=(report_r, nonce, records, rejected), daemon=True,
                              name="taskgym-grade-report")
    reader.start()
    opened.remove(report_r)  # the reader closes it
    fds = [int(v) for v in env.values()]
    warm = preload is not None and not pass_fds and pool_size(backend) > 0 and _can_prestart(backend)
    path = "cold"
    try:
        if warm:
            assert preload is not None
            result, usage, path = run_warm(backend, spec, argv, preload, seed=seed,
                                           timeout=timeout,
                                           fds={name: int(v) for name, v in env.items()})
        else:
            spec = spec.model_copy(update={"env": {**spec.env, **env}})
            result, usage = backend.run(spec, argv, seed=seed, timeout=timeout,
                                        pass_fds=[*fds, *pass_fds])
    except SandboxError as exc:
        if isinstance(exc, (SandboxFileError, SandboxPathError, SandboxTextError,
                            HostResourceError, SandboxLostError)):
            raise  # the policy's files (graded), or a class the env's step knows
        if not any(r.get("phase") == "started" for r in records):
            raise _not_started(exc, records) from exc
        raise  # on the policy's work: graded
    finally:
        os.close(report_w)
        opened.remove(report_w)
        reader.join(timeout=10)
    return GraderRun(result, usage, records, rejected, path)


def _not_started(exc: SandboxError, records: list[dict[str, Any]]) -> NoVerdictError:
    """The no-verdict error of a grading sandbox that failed before its grader started on the
    policy's work: it could not start (``sandbox_start``), or it failed in the grader's own
    setup (``grader_crash``)."""
    if records:
        failure, reason = "grader_crash", f"the grading sandbox failed in the grader's setup: {exc}"
    else:
        failure, reason = "sandbox_start", (f"the grading sandbox could not start: {exc} "
                                            "(`taskgym doctor` checks the backend)")
    return NoVerdictError(f"no verdict ({failure}): {reason}", failure=failure, reason=reason)


def _can_prestart(backend: Backend) -> bool:
    return type(backend).prestart is not Backend.prestart


def _secret_descriptor(content: bytes) -> int:
    """A descriptor of an unlinked file holding ``content``, at offset 0."""
    with tempfile.TemporaryFile(dir=runtime_root()) as handle:
        handle.write(content)
        handle.flush()
        handle.seek(0)
        return os.dup(handle.fileno())


def _collect(fd: int, nonce: str, records: list[dict[str, Any]],
             rejected: list[tuple[int, str]]) -> None:
    prefix = nonce.encode() + b" "
    read = 0
    with os.fdopen(fd, "rb") as stream:
        for line in stream:
            read += len(line)
            if read > REPORT_LIMIT:  # drain, so the grader never blocks on a full pipe
                if read - len(line) <= REPORT_LIMIT:
                    rejected.append((len(records), f"the report ran past {REPORT_LIMIT >> 20} MB"))
                continue
            record = _record(line, prefix)
            if isinstance(record, str):
                rejected.append((len(records), record))
            else:
                records.append(record)


def _record(line: bytes, prefix: bytes) -> dict[str, Any] | str:
    """The nonce-tagged JSON object on ``line``, else why it is none."""
    if not line.startswith(prefix):
        return "a line without the grade's nonce"
    if not line.endswith(b"\n"):
        return "a line cut short"
    try:
        record = json.loads(line[len(prefix):])
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return "a line that is not JSON"
    return record if isinstance(record, dict) else "a line that is not a JSON object"
