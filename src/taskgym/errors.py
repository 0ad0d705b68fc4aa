"""Every error taskgym raises, rooted at one class.

```
TaskgymError
├── ConfigError(ValueError)             a bad argument, option or task file
│   ├── UnknownEnvError(KeyError)       no env with that id ("did you mean ...?")
│   └── TaskNotFoundError(KeyError)     no task with that id in the task set
├── MissingDependencyError(ImportError) an optional extra or a system package is missing
│   └── GraderDependencyError           what a task's grader needs is missing in its sandbox
├── SandboxError(RuntimeError)          the sandbox could not be started or used
│   ├── SandboxUnavailableError         this backend cannot run on this machine
│   ├── HostResourceError               the host ran out of descriptors, processes or memory
│   ├── SandboxLostError                a sandbox was taken away from outside (killed, engine gone)
│   ├── SandboxTextError(ConfigError)   text a sandbox cannot carry (a NUL, a lone surrogate)
│   ├── SandboxPathError(ConfigError)   a path the file tools refuse (outside, a link, a fifo)
│   └── SandboxFileError(OSError)       a file operation of the sandbox failed (missing, full)
└── VerifierError(RuntimeError)         grading itself failed (not the agent's answer)
    └── NoVerdictError                  an episode ended with no verdict (make(on_no_verdict="raise"))
```

Each message says what to do about it. An optional import is one block (:func:`needs_extra`)
whose ``ImportError`` becomes a :class:`MissingDependencyError` naming the extra to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "ConfigError",
    "GraderDependencyError",
    "HostResourceError",
    "MissingDependencyError",
    "NoVerdictError",
    "SandboxError",
    "SandboxFileError",
    "SandboxLostError",
    "SandboxPathError",
    "SandboxTextError",
    "SandboxUnavailableError",
    "TaskNotFoundError",
    "TaskgymError",
    "UnknownEnvError",
    "VerifierError",
    "needs_extra",
]


class TaskgymError(Exception):
    """Root of every error raised by taskgym."""


class ConfigError(TaskgymError, ValueError):
    """An argument, option or task file is invalid."""


class UnknownEnvError(ConfigError, KeyError):
    """No environment is registered under the requested id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class TaskNotFoundError(ConfigError, KeyError):
    """The task set has no task with the requested id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(TaskgymError, ImportError):
    """An optional Python extra or a system package is needed and missing."""


class GraderDependencyError(MissingDependencyError):
    """What a task's grader needs (pytest, a pytest plugin, a domain's Python package) is
    missing in the view of the grader's sandbox: raised by ``reset`` before an episode that
    could not be graded starts (:mod:`taskgym.core.preflight`), with the fix
    ``taskgym doctor`` gives."""


class SandboxError(TaskgymError, RuntimeError):
    """The sandbox could not be started, or failed while in use."""


class SandboxUnavailableError(SandboxError):
    """The requested sandbox backend cannot run on this machine."""


class HostResourceError(SandboxError):
    """The host (this process, its user or the machine) ran out of file descriptors,
    processes or memory while starting or driving a sandbox: not the sandboxed code's doing,
    whose own limits are the sandbox's (an episode that ends on it has no verdict)."""


class SandboxLostError(SandboxError):
    """A sandbox was taken away from outside while in use: its outer process or container
    killed by a signal nothing inside it can send (an episode that ends on it has no
    verdict)."""


class SandboxTextError(SandboxError, ConfigError):
    """A command, path or variable holds what no shell or file system takes: a NUL character,
    or a lone surrogate (``"\\ud800"``; ``\\udc80``-``\\udcff`` stand for raw bytes and pass)."""


class SandboxPathError(SandboxError, ConfigError):
    """A path the file tools refuse: outside the workspace, through a symbolic link, ``..``,
    or not a regular file (a folder, a fifo, a device)."""


class SandboxFileError(SandboxError, OSError):
    """A file operation of the sandbox failed: no such file, the workspace is full, no
    permission. ``errno`` is the system's error number (an ``OSError`` too, so code that
    handles file errors keeps working)."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class VerifierError(TaskgymError, RuntimeError):
    """Grading failed for a reason other than the agent's work. Raised as its one subclass,
    :class:`NoVerdictError`; catch this to catch every failure of the grading side."""


class NoVerdictError(VerifierError):
    """An episode ended with no verdict: the environment failed, not the policy (raised by
    ``step`` instead of returning the episode's end when the env was made with
    ``on_no_verdict="raise"``). ``failure`` is the class (a
    :class:`taskgym.core.reward.FailureClass` value), ``reason`` what happened and what fixes it,
    ``result`` the :class:`~taskgym.core.reward.RewardResult` (``verdict == "none"``)."""

    def __init__(self, message: str, *, failure: str, reason: str, result: object = None) -> None:
        super().__init__(message)
        self.failure = failure
        self.reason = reason
        self.result = result


@contextmanager
def needs_extra(what: str, extra: str) -> Iterator[None]:
    """Optional imports: an ``ImportError`` raised in the block becomes a
    :class:`MissingDependencyError` naming the module that is missing and taskgym's ``extra``
    that installs it (a :class:`MissingDependencyError` passes unchanged)::

        with needs_extra("RemoteEnv", "serve"):
            import websockets
        # MissingDependencyError: RemoteEnv needs websockets: pip install 'taskgym[serve]'
    """
    try:
        yield
    except MissingDependencyError:
        raise
    except ImportError as exc:
        missing = exc.name or "a module that is not installed"
        raise MissingDependencyError(
            f"{what} needs {missing}: pip install 'taskgym[{extra}]'") from exc
