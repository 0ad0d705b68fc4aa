"""Tools shared by domains: a shell, file reading and writing, submit, and the env's end of a
warm in-sandbox worker (:mod:`taskgym.tools.worker`)."""

from taskgym.core.tool import submit_tool
from taskgym.tools.shell import shell_tools

__all__ = ["shell_tools", "submit_tool"]
