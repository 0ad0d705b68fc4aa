"""A scratch filesystem with reflinks on a loop device, to try copy-on-write workspaces.

``with loop_filesystem("btrfs") as folder:`` makes a sparse image file, formats it (btrfs
with quotas enabled, or XFS with ``reflink=1``), mounts it through a loop device and yields
the mount point; on the way out (errors included) it unmounts it and deletes the image. Point
the runtime root at it (:func:`~taskgym.sandbox.host.cleanup.set_runtime_root`) to put snapshots
and, on btrfs, workspaces there (:mod:`taskgym.sandbox.snapshots.disk`). Needs root and the
filesystem's tools (``xfsprogs``, ``btrfs-progs``); the benchmark and the tests of
copy-on-write use it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from taskgym.errors import ConfigError

__all__ = ["loop_filesystem", "missing"]

_TOOLS = {"xfs": ("mkfs.xfs", "xfsprogs"), "btrfs": ("mkfs.btrfs", "btrfs-progs")}


def missing(kind: Literal["xfs", "btrfs"]) -> str | None:
    """Why :func:`loop_filesystem` cannot run here, or ``None``."""
    tool, package = _TOOLS[kind]
    if os.geteuid() != 0:
        return "mounting a loop filesystem needs root"
    if shutil.which(tool) is None or (kind == "btrfs" and shutil.which("btrfs") is None):
        return f"{tool} is missing: install {package} (apt-get install {package})"
    if kind not in Path("/proc/filesystems").read_text().split():
        return f"this kernel has no {kind}"
    return None


@contextlib.contextmanager
def loop_filesystem(kind: Literal["xfs", "btrfs"], size_mb: int = 4096,
                    parent: str | None = None) -> Iterator[Path]:
    """Mount a new ``kind`` filesystem of ``size_mb`` MiB (a sparse image under ``parent``,
    default the system's temporary folder) and yield its mount point; see the module."""
    problem = missing(kind)
    if problem:
        raise ConfigError(problem)
    work = Path(tempfile.mkdtemp(prefix="taskgym-loopfs-", dir=parent))
    image, mount_point = work / "image", work / "mnt"
    mounted = False
    try:
        with image.open("wb") as handle:
            handle.truncate(size_mb << 20)
        mount_point.mkdir()
        mkfs = (["mkfs.xfs", "-q", "-m", "reflink=1"] if kind == "xfs"
                else ["mkfs.btrfs", "-q"])
        _run([*mkfs, str(image)])
        _run(["mount", "-o", "loop", str(image), str(mount_point)])
        mounted = True
        if kind == "btrfs":
            _run(["btrfs", "quota", "enable", str(mount_point)])
        yield mount_point
    finally:
        if mounted:
            result = subprocess.run(["umount", str(mount_point)], capture_output=True, text=True)
            if result.returncode != 0:  # still busy: detach now, freed when the last user goes
                subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise ConfigError(f"{argv[0]} failed: {result.stderr.strip() or result.returncode}")
