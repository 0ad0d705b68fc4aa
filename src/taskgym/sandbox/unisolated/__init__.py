"""A backend that isolates nothing: each session is a plain ``bash`` in a host temp folder.

**Not a sandbox.** Commands run as this process's user, on the host's file system, network
and processes: anything a command may do, it does to this machine. It exists as a test
double that needs neither bubblewrap nor Docker (a domain author's unit tests, CI without
namespaces, a third party writing its own backend against the contract), and as the honest
example of what the contract asks of a session: a persistent shell (``cd``, variables and
functions carry over), timeouts that kill what the command started and replace a hung
shell, capped output, file tools confined to the workspace by descriptor, export, seeding
and one-shot runs with descriptors passed. Choose it by name: ``sandbox="unisolated"``.

Where it differs from a sandbox, and so which conformance checks it skips
(:data:`SKIPPED_CHECKS`, each with its reason):

- the workspace is a host temp folder, not ``spec.workdir`` (no mount namespace): commands
  see its host path in ``$PWD``; the file tools still take paths under ``spec.workdir``; a
  spec that needs a mount (``ro_binds``, ``writable_dirs``, ``image``) is refused with
  :class:`~taskgym.errors.ConfigError`;
- no limits (memory, processes, CPU, disk), no isolation (file system, identity, network,
  processes, other sessions), and the controller's environment is the host's;
- ``kill -9 -1`` in a command would signal every process of this user, this one included;
- :meth:`~UnisolatedSession.usage` measures nothing (zeros); no snapshots, no warm graders.
"""

from taskgym.sandbox.unisolated.backend import SKIPPED_CHECKS, UnisolatedBackend, UnisolatedConfig
from taskgym.sandbox.unisolated.session import UnisolatedSession

__all__ = ["SKIPPED_CHECKS", "UnisolatedBackend", "UnisolatedConfig", "UnisolatedSession"]
