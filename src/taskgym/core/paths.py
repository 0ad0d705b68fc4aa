"""Where taskgym's data lives: the ``envs/`` folder of task folders and templates."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["envs_dir"]


def envs_dir() -> Path:
    """``$TASKGYM_ENVS``, else the ``envs`` folder shipped in the package or beside the source."""
    override = os.environ.get("TASKGYM_ENVS")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "envs", here.parent.parent / "envs"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "taskgym's envs folder is missing from this installation; reinstall taskgym or set "
        "TASKGYM_ENVS to a checkout's envs/ folder")
