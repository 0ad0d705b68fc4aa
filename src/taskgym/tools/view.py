"""The shared mesh renderer that sandboxed workers draw PNG views with (``inside/meshview.py``),
and the host side of a render: the PNG a worker wrote, read back and attached."""

from __future__ import annotations

from pathlib import Path

from taskgym.core.tool import ToolResult
from taskgym.errors import SandboxError
from taskgym.sandbox import Session

__all__ = ["RENDER_LIMIT", "VIEW_BINDS", "VIEW_DIR", "VIEW_MOUNT", "rendered"]

VIEW_DIR = Path(__file__).parent / "inside"
VIEW_MOUNT = "/.taskgym-view"
"""Where sandboxes see :data:`VIEW_DIR`; in-sandbox scripts put it on ``sys.path``."""
VIEW_BINDS = {str(VIEW_DIR): VIEW_MOUNT}
"""The read-only bind a sandbox spec adds to offer the renderer."""
RENDER_LIMIT = 8 << 20
"""The largest PNG read back from a sandbox."""


def rendered(session: Session, text: str, png: str | None) -> ToolResult:
    """``text`` with the PNG a worker wrote at ``png`` (in the workspace) attached; an error
    result when there is none, it cannot be read, or it is not a PNG (the sandbox is the
    agent's: the file may be anything)."""
    if not png:
        return ToolResult(text, error=text)
    try:
        image = session.read_file(png, limit=RENDER_LIMIT)
    except (SandboxError, OSError, ValueError) as exc:
        return ToolResult(f"error: the render could not be read: {exc}", error=str(exc))
    if not image.startswith(b"\x89PNG\r\n\x1a\n"):
        message = f"the render {png} is not a PNG image"
        return ToolResult(f"error: {message}", error=message)
    return ToolResult(text, images=(image,))
