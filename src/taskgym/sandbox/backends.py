"""Backends by name, through the ``taskgym.backends`` entry-point group.

A backend registers exactly as an env does (``taskgym.envs``): its package declares a
``name = "module:Class"`` entry point, and ``sandbox="name"`` (or ``{"type": "name", ...}``,
``--sandbox name``) finds it. taskgym's own backends (``local``, ``docker``, ``unisolated``)
are declared so in its ``pyproject.toml``::

    [project.entry-points."taskgym.backends"]
    my-vm = "my_package.sandbox:VmBackend"

The class is a :class:`~taskgym.sandbox.base.Backend` whose ``config_class`` is a
:class:`~taskgym.sandbox.config.BackendConfig` with ``type: Literal["my-vm"]``; it is imported
only when its name is chosen.
"""

from __future__ import annotations

import difflib
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from taskgym.errors import ConfigError

if TYPE_CHECKING:
    from taskgym.sandbox.base import Backend

__all__ = ["ENTRY_POINT_GROUP", "backend_class", "installed_backends"]

ENTRY_POINT_GROUP = "taskgym.backends"


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point)  # the first distribution on the path wins
    return found


def installed_backends() -> list[str]:
    """The names of the installed backends, sorted."""
    return sorted(_entry_points())


def backend_class(name: str) -> type[Backend]:
    """The backend class registered as ``name``; raises :class:`ConfigError` naming the
    installed backends (and the nearest name) when there is none, or when what is registered
    cannot be imported or is no :class:`~taskgym.sandbox.base.Backend`."""
    from taskgym.sandbox.base import Backend

    points = _entry_points()
    point = points.get(name)
    if point is None:
        near = difflib.get_close_matches(name, list(points), n=1)
        hint = f" Did you mean {near[0]!r}?" if near else ""
        installed = ", ".join(map(repr, sorted(points))) or "none"
        raise ConfigError(
            f"no sandbox backend named {name!r} is installed (installed: {installed}).{hint} "
            f"Backends register through the {ENTRY_POINT_GROUP!r} entry-point group; when "
            "taskgym's own are missing, its package metadata predates them: reinstall taskgym "
            "(`pip install -e .` in a checkout).")
    try:
        loaded = point.load()
    except ImportError as exc:
        raise ConfigError(f"the sandbox backend {name!r} ({point.value}) cannot be imported: "
                          f"{exc}") from exc
    if not (isinstance(loaded, type) and issubclass(loaded, Backend)):
        raise ConfigError(f"the sandbox backend {name!r} ({point.value}) is not a Backend class")
    return loaded
