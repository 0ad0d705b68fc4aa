"""Where taskgym's files live: the ``envs/`` folder of task folders and templates, and the
cache of generated tasks and prepared workspaces, with how finished folders enter it.

Every layer may use these (the sandbox hides both from agents), so they sit below them all.
A cached folder is built in a staging folder beside its place and renamed there in one step
(:func:`staging_for`, :func:`publish_folder`), so readers never see half of one and
processes that build the same key at once all end with the one that won."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "envs_dir", "linked_folder", "publish_folder", "read_cached", "staging_for",
           "write_atomic", "write_cached"]


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


def read_cached(kind: str, key: str) -> Any:
    """The JSON value :func:`write_cached` kept under ``key``, or ``None`` when there is none
    (or it cannot be read: a cache entry is only ever a shortcut)."""
    try:
        return json.loads((cache_dir() / kind / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def write_cached(kind: str, key: str, value: Any) -> None:
    """Keep the JSON ``value`` under ``cache_dir()/<kind>/<key>.json``, replaced in one step
    (readers in other processes see the old value or the new one)."""
    write_atomic(cache_dir() / kind / f"{key}.json", json.dumps(value).encode())


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: ``data`` goes to a temporary file beside it, which
    then replaces it in one rename (making the parent folders)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
