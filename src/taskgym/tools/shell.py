"""``bash``, ``read_file``, ``write_file`` and ``python``, over the episode's sandbox (``submit``,
which every env has, is :func:`taskgym.core.tool.submit_tool`)."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from pydantic import Field

from taskgym.core.tool import Tool, ToolArgs, ToolResult, inline_async, inline_plan
from taskgym.sandbox import ExecResult, Session
from taskgym.sandbox.shell.plans import Plan

__all__ = ["format_exec", "python_tool", "shell_tools"]

READ_LIMIT = 200_000


class BashArgs(ToolArgs):
    command: str = Field(description="Shell command line, run by a persistent bash in the workspace.")
    timeout: float | None = Field(
        default=None, gt=0, le=3600,
        description="Seconds before what the command started is killed (capped by the task).")


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the workspace or absolute inside it.")


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the workspace or absolute inside it.")
    content: str = Field(description="The whole new content of the file.")
    executable: bool = Field(default=False, description="Make the file executable.")


class PythonArgs(ToolArgs):
    code: str = Field(description="Python 3 source; print what you want to see.")
    timeout: float | None = Field(default=None, gt=0, le=600, description="Seconds allowed.")


def format_exec(result: ExecResult) -> str:
    """What a terminal user would have seen, plus the exit status and any notes."""
    parts = [result.stdout]
    if result.stdout and not result.stdout.endswith("\n"):
        parts.append("\n")
    parts.append(result.stderr)
    if result.stderr and not result.stderr.endswith("\n"):
        parts.append("\n")
    if result.timed_out:
        parts.append(f"[timed out after {result.duration_sec:.1f}s: what the command started "
                     "was killed]\n")
    if result.truncated:
        parts.append("[output truncated: the middle was cut]\n")
    if result.restarted:
        parts.append("[the shell exited or hung, so a fresh one was started in the workspace: "
                     "variables, directory and background jobs were reset; files are kept]\n")
    parts.append(f"[exit code {result.exit_code}]")
    return "".join(parts)


def shell_tools(session: Callable[[], Session], max_timeout: Callable[[], float]) -> list[Tool]:
    """``bash``, ``read_file`` and ``write_file`` acting on the session ``session()`` returns.

    ``max_timeout()`` bounds a command's timeout (the task's limit and the time left).
    ``bash`` has an async form (awaiting :meth:`Session.aexec`) and a plan
    (:meth:`Session.exec_plan`); ``read_file`` and ``write_file`` are a few system calls on
    the workspace's directory descriptor, too quick to be worth a thread, so ``astep`` and
    the vector env's loop run them inline.
    """

    def timeout_of(args: BashArgs) -> float:
        limit = max_timeout()
        return min(args.timeout, limit) if args.timeout else limit

    def bash(args: BashArgs) -> ToolResult:
        return _bash_result(session().exec(args.command, timeout=timeout_of(args)))

    async def abash(args: BashArgs) -> ToolResult:
        return _bash_result(await session().aexec(args.command, timeout=timeout_of(args)))

    def bash_plan(args: BashArgs) -> Plan[ToolResult]:
        result = yield from session().exec_plan(args.command, timeout=timeout_of(args))
        return _bash_result(result)

    def read_file(args: ReadFileArgs) -> ToolResult:
        data = session().read_file(args.path, limit=READ_LIMIT + 1)
        if b"\x00" in data[:8192]:
            return ToolResult(f"[{args.path} is a binary file; inspect it with bash (xxd, od)]")
        text = data[:READ_LIMIT].decode("utf-8", errors="replace")
        if len(data) > READ_LIMIT:
            text += f"\n[file longer than {READ_LIMIT} bytes: shown up to there; use bash for the rest]"
        return ToolResult(text)

    def write_file(args: WriteFileArgs) -> ToolResult:
        data = args.content.encode("utf-8", "surrogateescape")
        session().write_file(args.path, data, 0o755 if args.executable else 0o644)
        return ToolResult(f"wrote {len(data)} bytes to {args.path}")

    return [
        Tool("bash", "Run a shell command in a persistent bash session (cwd and variables "
             "persist between calls). Returns stdout, stderr and the exit code.", BashArgs, bash,
             abash, bash_plan),
        Tool("read_file", "Read a text file of the workspace.", ReadFileArgs, read_file,
             inline_async(read_file), inline_plan(read_file)),
        Tool("write_file", "Create or overwrite a file of the workspace (parent folders are "
             "created).", WriteFileArgs, write_file, inline_async(write_file),
             inline_plan(write_file)),
    ]


def _bash_result(result: ExecResult) -> ToolResult:
    return ToolResult(format_exec(result), info={"exit_code": result.exit_code})
def python_tool(session: Callable[[], Session], max_timeout: Callable[[], float],
                description: str) -> Tool:
    """``python``: run a snippet with the sandbox's ``python3`` (stdin of a fresh process, so
    nothing persists between calls); ``description`` says what the sandbox offers it."""

    def command(args: PythonArgs) -> tuple[str, float]:
        limit = max_timeout()
        timeout = min(args.timeout, limit) if args.timeout else limit
        delimiter = "PY_" + secrets.token_hex(8)
        return f"python3 - <<'{delimiter}'\n{args.code}\n{delimiter}", timeout

    def python(args: PythonArgs) -> ToolResult:
        line, timeout = command(args)
        return _bash_result(session().exec(line, timeout=timeout))

    def python_plan(args: PythonArgs) -> Plan[ToolResult]:
        line, timeout = command(args)
        result = yield from session().exec_plan(line, timeout=timeout)
        return _bash_result(result)

    return Tool("python", description, PythonArgs, python, plan=python_plan)
