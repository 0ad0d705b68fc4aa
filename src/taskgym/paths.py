"""Where taskgym's files live: the ``envs/`` folder of task folders and templates, and the
cache of generated tasks and prepared workspaces, with how finished folders enter it.

Every layer may use these (the sandbox hides both from agents), so they sit below them all.
A cached folder is built in a staging folder beside its place and renamed there in one step
(:func:`staging_for`, :func:`publish_folder`), so readers never see half of one and
processes that build the same key at once all end with the one that won."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["cache_dir", "envs_dir", "linked_folder", "publish_folder", "staging_for"]


def envs_dir() -> Path:
    """``$TASKGYM_ENVS``, else the ``envs`` folder shipped in the package or beside the source."""
    override = os.environ.get("TASKGYM_ENVS")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent  # the package: src/taskgym, or site-packages/taskgym
    for candidate in (here / "envs", here.parent.parent / "envs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "taskgym's envs folder is missing from this installation; reinstall taskgym or set "
        "TASKGYM_ENVS to a checkout's envs/ folder")


def cache_dir() -> Path:
    """Where generated tasks and prepared workspaces are kept (``$TASKGYM_CACHE``)."""
    base = os.environ.get("TASKGYM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "taskgym")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def publish_folder(folder: Path, dest: Path) -> Path:
    """Move the finished ``folder`` to ``dest`` (on the same file system) in one rename.

    When another process published ``dest`` first, theirs stays and ``folder`` is removed:
    publishers of one cache key build identical folders. Any other failure (no permission,
    no space, another file system, ``dest`` a file) raises :class:`OSError`."""
    try:
        os.rename(folder, dest)
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not dest.is_dir():
            raise
        shutil.rmtree(folder, ignore_errors=True)
    return dest


@contextmanager
def staging_for(dest: Path) -> Iterator[Path]:
    """A path to build ``dest`` at (it does not exist yet; it lies beside ``dest``, on its file
    system), published to ``dest`` by :func:`publish_folder` when the block ends without an
    error; whatever the block left is removed in any case."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
    try:
        yield tmp / dest.name
        publish_folder(tmp / dest.name, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def linked_folder(kind: str, entries: Sequence[tuple[str, Path]]) -> Path:
    """A cached folder holding each ``(name, file)`` of ``entries`` at its relative ``name``,
    hard-linked (copied where links are refused), under ``cache_dir()/<kind>/``; keyed by the
    names and the files' paths, sizes and modification times, so a changed file makes a new one."""
    key = hashlib.sha256()
    for name, path in entries:
        stat = path.stat()
        key.update(f"{name}\0{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    dest = cache_dir() / kind / key.hexdigest()[:32]
    if dest.is_dir():
        return dest
    with staging_for(dest) as staging:
        for name, path in entries:
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:  # another file system, or links not allowed
                shutil.copy2(path, target)
        staging.mkdir(exist_ok=True)  # no entries: an empty folder
    return dest
