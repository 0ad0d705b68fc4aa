"""The domains' shared in-sandbox scripts (``inside/``): the mesh renderer that workers draw PNG
views with (``meshview.py``) and the warm worker's loop (``workerloop.py``); and the ``view``
argument of the render tools drawn with that renderer."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from taskgym.core.tool import ToolArgs

__all__ = ["VIEW_BINDS", "VIEW_DIR", "VIEW_MOUNT", "ViewArgs"]

VIEW_DIR = Path(__file__).parent / "inside"
VIEW_MOUNT = "/.taskgym-view"
"""Where sandboxes see :data:`VIEW_DIR`; in-sandbox scripts put it on ``sys.path``."""
VIEW_BINDS = {str(VIEW_DIR): VIEW_MOUNT}
"""The read-only bind a sandbox spec adds to offer these scripts."""


# The argument of a render tool: one of meshview.VIEWS. (No docstring: a model's docstring
# becomes the description of the tool's schema.)
class ViewArgs(ToolArgs):
    view: Literal["iso", "front", "top", "right", "bottom"] = Field(default="iso", description=(
        "iso: from (+X, -Y, +Z); front: along +Y; top: down -Z; right: along -X; bottom: up +Z."))
