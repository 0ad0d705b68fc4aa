"""Session snapshots: a workspace and a shell's state, saved on the host, restored anywhere.

A :class:`SessionSnapshot` holds

- a copy of the workspace in a host folder (mode 0700, named for the owning process so the
  reaper removes it if the process dies; never bound into any sandbox: a restore copies it
  into the new workspace), in memory or under :func:`~taskgym.sandbox.host.cleanup.runtime_root`
  as :mod:`taskgym.sandbox.snapshots.store` decides;
- the shell's state as a bash script: variables (exported and declared; not bash's own
  read-only or special ones), functions, aliases, ``shopt`` and ``set -o`` options, the
  umask and the working folder. It is captured by a command run in the persistent shell
  (``declare -p``, ``declare -f``, ``alias -p``...) and restored by sourcing the script in a
  fresh shell;
- the processes that ran in the background at the time (pid, command line). They are
  **not** carried: a restored session starts with only its shell.

The same code serves the local and the docker sessions: both reach their workspace and
their control folder through a host descriptor (``/proc/<pid>/root``). See
docs/architecture.md, "Snapshots and forks".
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskgym.errors import SandboxError
from taskgym.sandbox.host import tree
from taskgym.sandbox.shell.commands import CONTROL_DIR
from taskgym.sandbox.snapshots import store

if TYPE_CHECKING:
    from taskgym.sandbox.base import ExecResult, SandboxSpec

__all__ = ["BackgroundProcess", "SessionSnapshot", "ShellState", "SnapshotSupport"]

SHELL_STATE_MAX = 1 << 20
"""Largest shell state a snapshot takes (bytes of script); more is a :class:`SandboxError`."""

_SKIP_VARS = (  # bash's read-only ones among them; the agent's own read-only ones are kept
    "BASH BASHOPTS BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_CMDS BASH_COMMAND "
    "BASH_LINENO BASH_LOADABLES_PATH BASH_REMATCH BASH_SOURCE BASH_SUBSHELL BASH_VERSINFO "
    "BASH_VERSION BASH_EXECUTION_STRING COLUMNS COMP_WORDBREAKS DIRSTACK EPOCHREALTIME "
    "EPOCHSECONDS EUID FUNCNAME GROUPS HISTCMD HOSTNAME HOSTTYPE LINENO LINES MACHTYPE OLDPWD "
    "OPTERR OPTIND OSTYPE PIPESTATUS PPID PWD RANDOM SECONDS SHELLOPTS SHLVL SRANDOM UID _"
).split()
"""Variables bash sets itself; the fresh shell has its own."""

_SKIP_VAR_SET = frozenset(_SKIP_VARS)

_SKIP_OPTIONS = ("login_shell", "restricted_shell", "history", "monitor", "interactive")
"""``shopt``/``set -o`` lines a running shell cannot take or should not (interactivity)."""
_SKIP_OPTION_SET = frozenset(_SKIP_OPTIONS)

_SECTIONS = ("variables", "functions", "aliases", "shopt", "set", "umask", "cwd")


@dataclass(frozen=True, slots=True)
class BackgroundProcess:
    """A process that ran beside the shell when the snapshot was taken (not carried)."""

    pid: int
    """Its pid as the host sees it."""
    command: str
    """Its command line, arguments joined by spaces."""


@dataclass(frozen=True, slots=True)
class ShellState:
    """The persistent shell's state, each part as the bash text that recreates it."""

    variables: str
    functions: str
    aliases: str
    shopt: str
    set_options: str
    umask: str
    cwd: str

    def script(self) -> str:
        """The script a fresh shell sources: the agent's functions and aliases come after
        the builtins it calls, options last (so ``errexit`` cannot stop it)."""
        return "\n".join((self.variables, f"umask {self.umask}", f"cd -- {_quote(self.cwd)}",
                          self.functions, self.aliases, self.shopt, self.set_options, ""))


@dataclass(eq=False)
class SessionSnapshot:
    """A saved workspace and shell state (see :mod:`taskgym.sandbox.snapshots.session_snapshot`).

    Restore it with :meth:`Session.restore <taskgym.sandbox.Session.restore>` or start a new
    session from it with :meth:`Backend.fork <taskgym.sandbox.Backend.fork>`. Restoring never
    changes it: one snapshot serves any number of restores. :meth:`close` deletes its folder
    (also done when it is garbage-collected, at exit, or by the reaper after a crash).
    """

    spec: SandboxSpec
    """The spec of the session it was taken from (a fork starts with the same)."""
    shell: ShellState
    workspace_bytes: int
    """Bytes of file data in the saved workspace (the replay cache's measure)."""
    background: tuple[BackgroundProcess, ...]
    """Processes running beside the shell when it was taken; not carried by a restore."""
    folder: Path
    workspace_mode: int = 0o755
    """The permission bits of the workspace folder itself."""
    copy_method: str = "copy"
    """How the workspace was saved: ``"reflink"`` (every file cloned, sharing the
    workspace's extents: copy-on-write), ``"copy"`` (the data copied: the documented
    fallback, e.g. from a tmpfs workspace or onto ext4), ``"mixed"`` or ``"empty"``."""
    copy_note: str = ""
    """Why a clone failed when one did (``EXDEV``: two filesystems; ``EOPNOTSUPP``: no
    reflinks on this filesystem)."""
    storage: str = "runtime-root"
    """Where :attr:`folder` is: ``"memory"`` (``/dev/shm``) or ``"runtime-root"`` (see
    :mod:`taskgym.sandbox.snapshots.store`)."""
    memory_bytes: int = 0
    """What it counts in :func:`~taskgym.sandbox.snapshots.store.memory_held` until closed."""
    _finalizer: weakref.finalize[Any, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._finalizer = weakref.finalize(self, _remove, str(self.folder), self.memory_bytes,
                                           os.getpid())

    @property
    def workspace(self) -> Path:
        """The host folder holding the saved workspace."""
        if not self._finalizer.alive:
            raise SandboxError("the snapshot is closed; take a new one with snapshot()")
        return self.folder / "ws"

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Delete the saved workspace. Idempotent."""
        self._finalizer()


class SnapshotSupport:
    """Snapshot and restore for a session that reaches its workspace by ``_root_fd`` and runs
    commands with ``exec``; the session supplies its control folder, its background processes
    and a way to replace its shell by a fresh one (:meth:`_fresh_shell`)."""

    spec: SandboxSpec
    _root_fd: int

    # -- what the session supplies -----------------------------------------------------
    def _control_path(self) -> str:
        """The host path of the sandbox's control folder (``/proc/<pid>/root/.taskgym``)."""
        raise NotImplementedError

    def _background(self) -> list[int]:
        """Host pids of the sandbox's processes other than its shell and its init."""
        raise NotImplementedError

    def _fresh_shell(self, keep_workspace: bool = False) -> None:
        """Kill every process and start a new shell; the workspace stays when
        ``keep_workspace`` (else it may be a new, empty one: a restore refills it)."""
        raise NotImplementedError

    # -- the API -----------------------------------------------------------------------
    def snapshot(self) -> SessionSnapshot:
        from taskgym.sandbox.base import Session

        assert isinstance(self, Session)
        if not self.alive:
            raise SandboxError("the session is stopped; a snapshot needs its running shell")
        background = tuple(_describe(pid) for pid in self._background())
        shell = self._capture_shell()
        saved = store.save(self._root_fd, self.spec.disk_mb << 20,
                                    self.workspace_storage == "tmpfs")
        mode = stat.S_IMODE(os.fstat(self._root_fd).st_mode)
        return SessionSnapshot(self.spec, shell, saved.size, background, saved.folder, mode,
                               saved.stats.method, saved.stats.clone_error, saved.storage,
                               saved.memory_bytes)

    def restore(self, snap: SessionSnapshot) -> None:
        if self._root_fd < 0:
            raise SandboxError("the session is closed")
        self._fresh_shell()
        self._apply(snap, clear=True)

    def adopt(self, snap: SessionSnapshot) -> None:
        """Fill a just-started session (empty workspace, new shell) from ``snap``: what
        :meth:`Backend.fork <taskgym.sandbox.Backend.fork>` does after starting it."""
        self._apply(snap, clear=False)

    def exec_apart(self, command: str, timeout: float) -> ExecResult:
        """See :meth:`Session.exec_apart <taskgym.sandbox.Session.exec_apart>`; a shell whose
        state cannot be captured (the agent broke it) is replaced without it."""
        from taskgym.sandbox.base import Session

        assert isinstance(self, Session)
        if self._root_fd < 0:
            raise SandboxError("the session is closed")
        try:
            state: ShellState | None = self._capture_shell()
        except SandboxError:
            state = None
        self._fresh_shell(keep_workspace=True)
        result = self.exec(command, timeout=timeout)
        if state is not None:
            self._source_shell(state)
        return result

    def _apply(self, snap: SessionSnapshot, clear: bool) -> None:
        """Copy the snapshot's workspace in (after emptying it when ``clear``) and source its
        shell state into the shell."""
        src_path = snap.workspace
        try:
            if clear:
                tree.clear_tree(self._root_fd)
            src = os.open(src_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                tree.copy_tree(src, self._root_fd)
            finally:
                os.close(src)
            os.fchmod(self._root_fd, snap.workspace_mode)
        except OSError as exc:
            raise SandboxError(f"could not restore the workspace: {exc}") from exc
        self._source_shell(snap.shell)

    def _source_shell(self, state: ShellState) -> None:
        """Source ``state`` into the shell, through a file on the control tmpfs."""
        from taskgym.sandbox.base import Session

        assert isinstance(self, Session)
        name = f"state-{secrets.token_hex(6)}"
        try:
            control = self._open_control()
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o644, dir_fd=control)
                with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as out:
                    out.write(state.script())
            finally:
                os.close(control)
        except OSError as exc:
            raise SandboxError(f"could not restore the shell's state: {exc}") from exc
        try:
            result = self.exec(f"\\builtin . {CONTROL_DIR}/{name} 2>/dev/null", timeout=30.0)
        finally:
            with contextlib.suppress(OSError, SandboxError):  # a shell restart: a new sandbox
                control = self._open_control()
                try:
                    os.unlink(name, dir_fd=control)
                finally:
                    os.close(control)
        if result.restarted or result.timed_out:
            raise SandboxError("the shell did not take the snapshot's state: "
                               f"{result.stderr.strip()[:500]}")

    # -- shell state -------------------------------------------------------------------
    def _capture_shell(self) -> ShellState:
        from taskgym.sandbox.base import Session

        assert isinstance(self, Session)
        name = f"capture-{secrets.token_hex(6)}"
        mark = f"__TG_SECTION_{secrets.token_hex(8)}"
        path = f"{CONTROL_DIR}/{name}"
        # no fork, and builtins are called through \builtin, past the agent's functions and
        # aliases; bash's own variables are dropped here (_keep_variables); the shell's own
        # readonly functions (__ts) are printed too, and fail harmlessly on restore
        script = (
            "{ \\builtin declare -p; "
            f"\\builtin printf '\\n{mark}\\n'; \\builtin declare -f; "
            f"\\builtin printf '\\n{mark}\\n'; \\builtin alias -p; "
            f"\\builtin printf '\\n{mark}\\n'; \\builtin shopt -p; "
            f"\\builtin printf '\\n{mark}\\n'; \\builtin set +o; "
            f"\\builtin printf '\\n{mark}\\n'; \\builtin umask; "
            f"\\builtin printf '\\n{mark}\\n%s' \"$PWD\"; }} >{path} 2>/dev/null"
        )
        result = self.exec(script, timeout=30.0)
        if result.restarted or result.timed_out:
            raise SandboxError("the shell did not report its state for the snapshot "
                               f"({'timed out' if result.timed_out else 'it died'})")
        control = self._open_control()
        try:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=control)
            except OSError as exc:
                raise SandboxError(f"the shell did not write its state: {exc}") from exc
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise SandboxError("the shell's state is not a regular file")
                data = os.read(fd, SHELL_STATE_MAX + 1)
            finally:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=control)
        finally:
            os.close(control)
        if len(data) > SHELL_STATE_MAX:
            raise SandboxError(f"the shell's state is over {SHELL_STATE_MAX} bytes (variables "
                               "and functions); unset some before taking a snapshot")
        parts = data.decode("utf-8", "surrogateescape").split(f"\n{mark}\n")
        if len(parts) != len(_SECTIONS):
            raise SandboxError("the shell's state could not be read (it has "
                               f"{len(parts)} parts of {len(_SECTIONS)})")
        values = dict(zip(_SECTIONS, parts, strict=True))
        return ShellState(
            variables=_keep_variables(values["variables"]),
            functions=values["functions"].strip("\n"),
            aliases=values["aliases"].strip("\n"),
            shopt=_keep_options(values["shopt"]),
            set_options=_keep_options(values["set"]),
            umask=values["umask"].strip() or "0022",
            cwd=values["cwd"] or self.spec.workdir,
        )

    def _open_control(self) -> int:
        try:
            return os.open(self._control_path(),
                           os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise SandboxError(f"the sandbox's control folder is gone: {exc}") from exc


def _remove(folder: str, memory_bytes: int, made_by: int) -> None:
    if os.getpid() != made_by:  # at a forked child's exit: the folder is the parent's
        return
    shutil.rmtree(folder, ignore_errors=True)
    store.release(memory_bytes)


def _keep_variables(text: str) -> str:
    """The ``declare -p`` listing without bash's own variables (:data:`_SKIP_VARS`,
    ``BASH_*``). Bash 5 prints one line per variable (a value with a newline or another
    unprintable character is ``$'...'``-quoted); a line that does not start a declaration
    (a literal newline in a value, older bash) stays with the one before."""
    kept: list[str] = []
    keep = False
    for line in text.strip("\n").split("\n"):
        if line.startswith("declare -"):
            words = line.split(" ", 2)
            name = words[2].split("=", 1)[0] if len(words) == 3 else ""
            keep = name not in _SKIP_VAR_SET and not name.startswith("BASH_")
        if keep:
            kept.append(line)
    return "\n".join(kept)


def _keep_options(text: str) -> str:
    return "\n".join(line for line in text.strip("\n").splitlines()
                     if _SKIP_OPTION_SET.isdisjoint(line.split()))


def _describe(pid: int) -> BackgroundProcess:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        raw = b""
    return BackgroundProcess(pid, raw.rstrip(b"\0").replace(b"\0", b" ").decode(
        "utf-8", "replace"))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
