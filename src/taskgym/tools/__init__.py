"""Tools shared by domains: a shell, file reading and writing, and submit."""

from taskgym.tools.shell import shell_tools, submit_tool

__all__ = ["shell_tools", "submit_tool"]
