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

from taskgym.errors import ConfigError, SandboxTextError

__all__ = ["BAD_STATUS_NOTE", "CONTROL_DIR", "CONTROL_MB", "SOURCE_TRIGGER", "STATUS_FD", "STATUS_MAX",
           "BadStatus", "CommandFile", "encode_text", "ending", "output_cap_note"]

CONTROL_DIR = "/.taskgym"
"""Where the host drops each command for the shell to source (a small tmpfs)."""
CONTROL_MB = 4
"""Size of the control tmpfs; a command may take half of it."""
STATUS_FD = 251
"""The shell's descriptor of its status channel (local backend): out of the way of what
commands redirect, and closed for each command (``251>&-``), so the programs a command starts
see only descriptors 0-2; bash keeps the saved copy close-on-exec and puts it back for
``__ts``. (What keeps other processes from writing a status line is the socket's credentials:
see :class:`~taskgym.sandbox.local.session.LocalSession`.)"""
SOURCE_TRIGGER = f". {CONTROL_DIR}/cmd".encode()
"""The start of the line that runs the command file (:func:`ending` follows)."""


def ending(seq: int) -> bytes:
    """How every trigger line ends: the command runs without the status descriptor, then
    ``__ts`` reports its status with ``seq``, the number the host expects on the line."""
    return b" %d>&-;__ts %d\n" % (STATUS_FD, seq)
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

    def trigger(self, command: str, seq: int) -> bytes:
        """The line to send the shell for ``command`` (writing the command file if needed),
        whose status line must carry ``seq``."""
        data = encode_text(command, "the command")
        if len(data) > (CONTROL_MB << 20) // 2:
            raise ConfigError(f"the command is {len(data)} bytes; the limit is "
                              f"{(CONTROL_MB << 20) // 2} (write long content with a file tool)")
        # `return` is an error at a prompt but ends a sourced file: such one-liners are sourced
        if (len(data) <= _INLINE_MAX and command.isascii() and command.isprintable()
                and b"return" not in data):
            words = command.split()
            if words and _PLAIN_CHARS.issuperset(command) and _RESERVED_WORDS.isdisjoint(words):
                return data + ending(seq)
            quoted = data.replace(b"\\", b"\\\\").replace(b"'", b"\\'")
            return b"eval $'" + quoted + b"'" + ending(seq)
        os.pwrite(self.fd, data, 0)
        if len(data) < self._length:
            os.ftruncate(self.fd, len(data))
        self._length = len(data)
        return SOURCE_TRIGGER + ending(seq)


def encode_text(text: str, what: str) -> bytes:
    """``text`` as the bytes a shell or file system gets (UTF-8; ``\\udc80``-``\\udcff``, as
    ``os.fsdecode`` makes them, stand for the raw bytes), or :class:`SandboxTextError`."""
    if "\x00" in text:
        raise SandboxTextError(f"{what} contains a NUL character, which a shell cannot take")
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise SandboxTextError(
            f"{what} contains a lone surrogate ({text[exc.start]!r} at {exc.start}), which is "
            "not text: send valid Unicode") from None


def output_cap_note(limit: int) -> str:
    """What a runaway command's observation ends with: which cap it hit, and what followed."""
    size = (f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else
            f"{limit >> 10} KiB" if limit % 1024 == 0 else f"{limit} bytes")
    return (f"\n[output cap hit: the command printed more than {size} on stdout or stderr "
            "(the stream limit); what it started was killed and only the head and tail are "
            "shown. Redirect big output to a file and look at parts of it.]\n")


STATUS_MAX = 64
"""A status line is shorter than this; anything longer on the channel is not one."""
BAD_STATUS_NOTE = (
    "\n[the shell's status channel carried something other than its status line (the command "
    "or a process it started wrote on it, or the shell's status report was changed): the "
    "shell was restarted; the workspace is kept, the working folder, variables and background "
    "jobs are not]\n")


class BadStatus(Exception):
    """What came on the status channel is not the status line expected."""
