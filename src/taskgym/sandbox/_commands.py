"""How a command reaches a persistent sandbox shell (shared by the local and docker sessions).

A short printable one-liner rides the trigger line itself, quoted as one ANSI-C word for
the shell function ``__tgi``; anything else is written to the command file on the control
tmpfs, which ``__tg`` sources (bash reads a regular file in one call, a pipe one byte at a
time).
"""

from __future__ import annotations

import os

from taskgym.errors import ConfigError

__all__ = ["CONTROL_MB", "CommandFile"]

CONTROL_MB = 4
"""Size of the control tmpfs; a command may take half of it."""
_INLINE_MAX = 64
"""Commands up to this many bytes of printable ASCII skip the command file."""


class CommandFile:
    """The host's descriptor of a session's command file, and the trigger for each command."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._length = 0

    def trigger(self, command: str) -> bytes:
        """The line to send the shell for ``command`` (writing the command file if needed)."""
        if "\x00" in command:
            raise ConfigError("the command contains a NUL character, which a shell cannot take")
        data = command.encode("utf-8", "surrogateescape")
        if len(data) > (CONTROL_MB << 20) // 2:
            raise ConfigError(f"the command is {len(data)} bytes; the limit is "
                              f"{(CONTROL_MB << 20) // 2} (write long content with a file tool)")
        if len(data) <= _INLINE_MAX and command.isascii() and command.isprintable():
            quoted = data.replace(b"\\", b"\\\\").replace(b"'", b"\\'")
            return b"__tgi $'" + quoted + b"'\n"
        os.pwrite(self.fd, data, 0)
        if len(data) < self._length:
            os.ftruncate(self.fd, len(data))
        self._length = len(data)
        return b"__tg\n"
