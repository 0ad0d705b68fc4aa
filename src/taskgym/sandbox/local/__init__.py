"""The embedded default backend: bubblewrap namespaces around a persistent shell.

Each session is one ``bwrap`` process tree: new user, pid, network (loopback only), ipc,
uts and cgroup namespaces; a new session (no terminal injection); every capability
dropped; no host ``/`` (only ``/usr`` and a few ``/etc`` files, read-only); the workspace
and ``/tmp`` as size-capped tmpfs; a seccomp filter; dies with its parent. Memory and
process limits come from a cgroup entered before the shell runs, or rlimits where no
cgroup can be had. The host reaches the workspace through a directory descriptor opened
at start, so files can be copied out after every process has been killed.
"""

from taskgym.sandbox.local.backend import LocalBackend
from taskgym.sandbox.local.command_line import etc_files
from taskgym.sandbox.local.session import LocalSession

__all__ = ["LocalBackend", "LocalSession", "etc_files"]
