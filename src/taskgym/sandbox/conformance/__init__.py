"""The conformance suite every sandbox backend must pass.

Each check takes a backend, starts what it needs, and raises ``AssertionError`` with a
message on failure. Run them all with :func:`check_backend`; the test suite runs each
one as its own test for every backend (and again as an unprivileged user)::

    from taskgym.sandbox.conformance import check_backend
    failures = check_backend(my_backend)   # {} when the backend conforms

The checks live by concept: :mod:`.shell` (the persistent shell), :mod:`.files` (file tools,
export, seeding), :mod:`.isolation` (what a sandbox can see and reach, cleanup),
:mod:`.limits` (memory, processes, CPU, disk) and :mod:`.secrets` (one-shot runs, and
nothing of the controller reaching the sandbox); :mod:`.registry` collects them.
"""

from __future__ import annotations

from taskgym.sandbox.base import Backend
from taskgym.sandbox.conformance import files, isolation, limits, secrets, shell
from taskgym.sandbox.conformance.registry import CHECKS

__all__ = ["CHECKS", "check_backend"]

_MODULES = (shell, files, isolation, limits, secrets)
"""Imported for their checks, which register themselves in :data:`CHECKS`."""


def check_backend(backend: Backend) -> dict[str, str]:
    """Run every check; returns ``{check name: failure message}`` (empty when conformant)."""
    failures = {}
    for name, check in CHECKS.items():
        try:
            check(backend)
        except AssertionError as exc:
            failures[name] = str(exc)
    return failures
