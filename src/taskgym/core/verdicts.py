"""Which failures of an episode's end are the environment's: the no-verdict rule in code.

The rule (docs/security.md has it with its table): what the policy can cause is graded, what it
cannot is no verdict. The policy is an adversary with a shell in its sandbox, and its code runs
in the grading sandbox of some domains, so a failure counts as the environment's only on
evidence the policy cannot forge:

- an exception raised on the host side, of a kind nothing in a sandbox can provoke: the host
  out of descriptors, processes or memory (:class:`~taskgym.errors.HostResourceError`), a
  sandbox killed from outside (:class:`~taskgym.errors.SandboxLostError`), a backend that cannot
  run or start a sandbox, the docker engine unreachable, the task's own files broken, an
  in-sandbox grader's dependency missing, a bug of taskgym;
- an in-sandbox grader that ended (timed out, crashed, reported nothing) after it announced
  its setup (``{"phase": "begun"}``: the seed copied, nothing of the policy's read) but
  before it announced it was ready to grade (``{"phase": "started"}``), records tagged with a
  nonce the policy never sees (:func:`grader_verdict`).

Everything else, a file error on the policy's workspace included, stays graded.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskgym import errors
from taskgym.core.reward import FailureClass, RewardResult

__all__ = ["BEGUN", "STARTED", "grader_verdict", "no_verdict_of", "raise_no_verdict"]

BEGUN = "begun"
"""The ``phase`` of an in-sandbox grader's first record: it runs (the seed is in place)."""
STARTED = "started"
"""The ``phase`` of the record an in-sandbox grader sends once its own setup is done
(dependencies imported, the reference loaded) and before it reads or runs anything the policy
left."""

_ENGINE_MODULES = ("docker.", "requests.", "urllib3.")
"""Where the docker engine client's exceptions come from: the engine went away."""


def no_verdict_of(exc: BaseException) -> RewardResult | None:
    """The no-verdict result of an episode that ended on ``exc``, or ``None`` when the policy
    could have caused it (the caller grades it as a failure, or calls it a crash)."""
    if isinstance(exc, errors.NoVerdictError):
        return RewardResult.no_verdict(FailureClass(exc.failure), exc.reason)
    if isinstance(exc, errors.HostResourceError):
        return RewardResult.no_verdict(FailureClass.HOST_RESOURCES, f"{exc} (the host ran out, "
                                       "not the sandbox: free resources, then reset)")
    if isinstance(exc, errors.SandboxLostError):
        return RewardResult.no_verdict(FailureClass.BACKEND_LOST, str(exc))
    if isinstance(exc, errors.SandboxUnavailableError):
        return RewardResult.no_verdict(FailureClass.SANDBOX_START, f"{exc} (`taskgym doctor` "
                                       "checks the backend)")
    if isinstance(exc, errors.MissingDependencyError):
        return RewardResult.no_verdict(FailureClass.GRADER_DEPENDENCY, str(exc))
    if isinstance(exc, errors.ConfigError) and not isinstance(exc, errors.SandboxError):
        return RewardResult.no_verdict(FailureClass.REFERENCE, f"the task's files are at fault: "
                                       f"{exc}")
    if type(exc).__module__.startswith(_ENGINE_MODULES):
        return RewardResult.no_verdict(FailureClass.BACKEND_LOST, f"the docker engine could not "
                                       f"be reached ({type(exc).__name__}: {exc}); check that it "
                                       "runs (`docker info`), then reset")
    return None  # the policy's (a TaskgymError: graded) or a bug (the caller's crash)


def raise_no_verdict(failure: FailureClass, reason: str) -> None:
    """Raise the :class:`NoVerdictError` of ``failure`` (for code below the env's step)."""
    raise errors.NoVerdictError(f"no verdict ({failure}): {reason}", failure=failure.value,
                                reason=reason)


def grader_verdict(phases: Sequence[str], *, fault: tuple[str, str] | None, timed_out: bool,
                   timeout: float, log: str, exit_code: int | None = None,
                   memory_full: bool = False) -> RewardResult | None:
    """The no-verdict result of an in-sandbox grade that ended without its final record, or
    ``None`` when it is the policy's (graded as a failure).

    ``phases`` are the phases the grader reported (nonce-tagged, in order), ``fault`` its own
    setup's fault record (``dependency``, ``reference`` or ``crash``, and its reason;
    :func:`taskgym.core.sandboxed_grader.read_report` reads both). A grader that never reported
    ``begun`` never ran past the seed copy, which holds the policy's files: graded. One that
    reported ``started`` was on the policy's work: graded. In between, the grader's own setup
    failed: its fault says which, else a timeout or a crash, unless the grade's memory peaked
    near its cap (``memory_full``): the copied workspace is charged to the same memory, so the
    policy's files may have starved the setup.
    Without ``begun``, an ``exit_code`` of 126 or 127 (given by a caller whose grader is
    ``exec``'d by the seed-copying shell, with nothing of the policy's running) is that
    shell's: the grader's interpreter is missing from the sandbox's read-only system, which the
    policy cannot touch.
    """
    if BEGUN not in phases:
        if exit_code in (126, 127) and not timed_out:
            return RewardResult.no_verdict(
                FailureClass.GRADER_DEPENDENCY, "the grader's interpreter could not be run in "
                f"the grading sandbox (exit status {exit_code}); `taskgym doctor` checks what the "
                "sandbox needs", log=log)
        return None
    if STARTED in phases or memory_full:  # the policy's files fill the sandbox's memory too
        return None
    if fault is not None:
        kind, reason = fault
        failure = {"dependency": FailureClass.GRADER_DEPENDENCY,
                   "reference": FailureClass.REFERENCE}.get(kind, FailureClass.GRADER_CRASH)
        return RewardResult.no_verdict(failure, reason, log=log)
    if timed_out:
        return RewardResult.no_verdict(
            FailureClass.GRADER_TIMEOUT, f"the grader ran past {timeout:g}s in its own setup, "
            "before it read anything the policy left (a loaded host? raise "
            "limits.verifier_timeout_sec)", log=log)
    return RewardResult.no_verdict(
        FailureClass.GRADER_CRASH, "the grader died in its own setup, before it read anything "
        "the policy left (its log is in details['log'])", log=log)
