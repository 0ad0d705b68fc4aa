"""How a command reaches a persistent sandbox shell (shared by the local and docker sessions).

A short printable one-liner rides the trigger line itself, quoted as one ANSI-C word for
``eval``; a plain one (words of letters, digits and ``-_./=:,+%@``, none of them a reserved
word, so it cannot be a syntax error, which would end the shell) rides it as it is, which
spares bash the second parse and the trigger nine bytes. Anything else is written to the
command file on the control tmpfs, which the trigger sources (bash reads a regular file in
one call, a pipe one byte at a time). Every way the command runs at the shell's top level,
as typed at a prompt, and the shell function ``__ts`` (each session defines it) then
reports the exit status.
"""

from __future__ import annotations

import os
import string

from taskgym.errors import ConfigError

__all__ = ["CONTROL_DIR", "CONTROL_MB", "SOURCE_TRIGGER", "CommandFile"]

CONTROL_DIR = "/.taskgym"
"""Where the host drops each command for the shell to source (a small tmpfs)."""
CONTROL_MB = 4
"""Size of the control tmpfs; a command may take half of it."""
SOURCE_TRIGGER = f". {CONTROL_DIR}/cmd;__ts\n".encode()
"""The line that runs the command file."""
_INLINE_MAX = 64
"""Commands up to this many bytes of printable ASCII skip the command file."""
_PLAIN_CHARS = frozenset(string.ascii_letters + string.digits + " -_./=:,+%@")
_RESERVED_WORDS = frozenset(
    "if then elif else fi case esac for select while until do done in function time coproc".split())


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
        # `return` is an error at a prompt but ends a sourced file: such one-liners are sourced
        if (len(data) <= _INLINE_MAX and command.isascii() and command.isprintable()
                and b"return" not in data):
            words = command.split()
            if words and _PLAIN_CHARS.issuperset(command) and _RESERVED_WORDS.isdisjoint(words):
                return data + b";__ts\n"
            quoted = data.replace(b"\\", b"\\\\").replace(b"'", b"\\'")
            return b"eval $'" + quoted + b"';__ts\n"
        os.pwrite(self.fd, data, 0)
        if len(data) < self._length:
            os.ftruncate(self.fd, len(data))
        self._length = len(data)
        return SOURCE_TRIGGER
