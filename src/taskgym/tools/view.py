"""The domains' shared in-sandbox scripts (``inside/``): the mesh renderer that workers draw PNG
views with (``meshview.py``) and the warm worker's loop (``workerloop.py``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["VIEW_BINDS", "VIEW_DIR", "VIEW_MOUNT"]

VIEW_DIR = Path(__file__).parent / "inside"
VIEW_MOUNT = "/.taskgym-view"
"""Where sandboxes see :data:`VIEW_DIR`; in-sandbox scripts put it on ``sys.path``."""
VIEW_BINDS = {str(VIEW_DIR): VIEW_MOUNT}
"""The read-only bind a sandbox spec adds to offer these scripts."""
