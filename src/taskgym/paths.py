"""Where taskgym's files live: the ``envs/`` folder of task folders and templates, and the
cache of generated tasks and prepared workspaces.

Every layer may use these (the sandbox hides both from agents), so they sit below them all."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "envs_dir"]


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
