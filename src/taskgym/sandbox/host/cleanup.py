"""Finding and removing what crashed runs left behind.

Everything a sandbox creates outside itself (cgroups, temporary folders) is named
``<owner pid>-<owner start time>-<token>``. At start-up, whatever carries the name of a
process that no longer exists is removed. Sandbox processes need no reaping: each dies
with its parent (``--die-with-parent``), and the reaper kills any still in a cgroup.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
import threading
from pathlib import Path

from taskgym.errors import ConfigError
from taskgym.sandbox.host.cgroups import cgroup_parents, remove_cgroup
from taskgym.sandbox.host.procs import proc_stat
from taskgym.sandbox.host.tree import remove_tree

__all__ = ["MEMORY_BASE", "leftovers", "memory_root", "owner_alive", "reap", "reap_once",
           "runtime_root", "scratch_dir", "session_name", "set_runtime_root"]

_lock = threading.Lock()
_reaped = False
_base: Path | None = None

MEMORY_BASE = Path("/dev/shm")
"""The memory-backed folder (a tmpfs) where :func:`memory_root` makes this user's folder."""


def _start_time(pid: int) -> str | None:
    fields = proc_stat(pid)
    return fields[19] if fields else None


def runtime_root() -> Path:
    """This user's folder for taskgym's temporary files (created 0700):
    ``<base>/taskgym-<uid>``, the base being what :func:`set_runtime_root` set, else
    ``TASKGYM_RUNTIME_ROOT``, else the system's temporary folder (``TMPDIR``, else ``/tmp``).

    Snapshots live here, and so do the workspaces of local sandboxes when this folder is on
    a filesystem with reflinks and project quotas (:mod:`taskgym.sandbox.snapshots.disk`): put it on
    such a filesystem (XFS made with ``reflink=1``, mounted with ``prjquota``) for
    copy-on-write forks."""
    base = _base if _base is not None else Path(
        os.environ.get("TASKGYM_RUNTIME_ROOT") or tempfile.gettempdir())
    root = base / f"taskgym-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def set_runtime_root(base: str | os.PathLike[str] | None) -> None:
    """Put taskgym's temporary files (snapshots, workspaces, scratch folders) under the folder
    ``base`` from now on (``None``: back to the default, see :func:`runtime_root`). Set it
    before starting sandboxes: what was made under the previous root stays there until
    closed. Raises :class:`ConfigError` when ``base`` is not an existing folder."""
    global _base
    if base is not None:
        path = Path(base).resolve()
        if not path.is_dir():
            raise ConfigError(f"the runtime root {str(base)!r} is not an existing folder; "
                              "create it (or mount the filesystem) first")
        _base = path
    else:
        _base = None


def memory_root(create: bool = True) -> Path | None:
    """This user's folder for snapshots kept in memory, ``/dev/shm/taskgym-<uid>`` (created
    0700 unless ``create`` is false; see :mod:`taskgym.sandbox.snapshots.store`), or ``None``
    when there is no such memory-backed folder here, it is not writable, or the name is taken
    by something that is not a folder of this user's with mode 0700 (``/dev/shm`` is writable
    by everyone)."""
    root = MEMORY_BASE / f"taskgym-{os.getuid()}"
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                root.mkdir(mode=0o700)
        st = root.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return root


def session_name() -> str:
    """A unique name that records the owning process."""
    return f"{os.getpid()}-{_start_time(os.getpid())}-{secrets.token_hex(4)}"


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    """A private temporary folder named for this process, so that the reaper removes it if
    the process dies before it does (use it as a context manager)."""
    return tempfile.TemporaryDirectory(prefix=session_name() + "-", dir=runtime_root())


def owner_alive(name: str) -> bool:
    """Whether the process that created ``name`` (see :func:`session_name`) still runs."""
    parts = name.split("-")
    if len(parts) < 3 or not parts[0].isdigit():
        return True  # not ours: leave it alone
    return _start_time(int(parts[0])) == parts[1]


def leftovers() -> list[Path]:
    """What sandboxes of dead owners left (temporary folders and cgroups), without removing
    anything: a controller killed by SIGKILL leaves these until :func:`reap` runs."""
    found = [entry for entry in runtime_root().iterdir()
             if entry.name != "etc" and not owner_alive(entry.name)]
    memory = memory_root(create=False)
    if memory is not None:
        found.extend(entry for entry in memory.iterdir() if not owner_alive(entry.name))
    for parent in cgroup_parents():
        with contextlib.suppress(OSError):
            found.extend(entry for entry in parent.iterdir()
                         if entry.is_dir() and not owner_alive(entry.name))
    return found


def reap() -> list[str]:
    """Remove leftovers of dead owners (see :func:`leftovers`); return what was removed."""
    removed: list[str] = []
    roots = [runtime_root(), memory_root(create=False)]
    for entry in leftovers():
        if any(root is not None and entry.is_relative_to(root) for root in roots):
            with contextlib.suppress(OSError):
                remove_tree(entry)  # any depth: an agent's folders may nest thousands deep
        else:
            remove_cgroup(entry)
        removed.append(str(entry))
    return removed


def reap_once() -> None:
    """Run :func:`reap` the first time a backend starts in this process."""
    global _reaped
    with _lock:
        if not _reaped:
            _reaped = True
            reap()
