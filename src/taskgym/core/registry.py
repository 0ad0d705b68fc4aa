"""Env ids, registered with Gymnasium under the ``taskgym`` namespace.

The registry is mechanism only: it names no env. Every env, taskgym's own included, comes
from an entry point of the ``taskgym.envs`` group, declared in its package's metadata::

    [project.entry-points."taskgym.envs"]
    my-env-v0 = "my_package.env:MyEnv"

The entry point's name is the env id and its value the ``"module:Class"`` that makes it.
Registration reads only that metadata, so it imports nothing; the class is imported when the
env is made, or when :func:`list_envs` asks for its one-line ``description``.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import threading
import warnings
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import gymnasium as gym

from taskgym.core.vector import TaskVectorEnv
from taskgym.core.wrappers import TaskMethods
from taskgym.errors import ConfigError, UnknownEnvError
from taskgym.paths import envs_dir

__all__ = ["ENTRY_POINT_GROUP", "EnvInfo", "NAMESPACE", "list_envs", "make", "make_vec",
           "register"]

NAMESPACE = "taskgym"
ENTRY_POINT_GROUP = "taskgym.envs"
SUGGEST_CUTOFF = 0.75
"""How alike (difflib ratio) an unknown id and a registered one must be for "did you mean":
a typo ("my-envv-v0" for "my-env-v0": 0.95) is; a shared ``-v0`` suffix ("nope-v0" and
"some-other-v0": 0.5) is not."""


@dataclass(frozen=True)
class EnvInfo:
    """A registered env: its id, the ``"module:Class"`` that makes it, and where it came from."""

    id: str
    entry_point: str
    description: str = ""
    source: str = "register()"


_REGISTRY: dict[str, EnvInfo] = {}
_plugins_loaded = False
_lock = threading.RLock()


def register(env_id: str, entry_point: str, description: str = "", *, override: bool = False,
             source: str = "register()", **kwargs: Any) -> None:
    """Make ``env_id`` available to :func:`make` and :func:`make_vec`, and to
    ``gymnasium.make("taskgym/<id>")`` and ``gymnasium.make_vec`` (whose default for it is
    taskgym's own vector env, :class:`~taskgym.core.vector.TaskVectorEnv`).

    ``entry_point`` is a ``"module:Class"`` string; ``description`` defaults to the class's
    own ``description`` attribute (read when listed). An id that is registered already raises
    :class:`ConfigError` unless ``override=True``. ``kwargs`` become the env's defaults.
    """
    if ":" not in entry_point:
        raise ConfigError(f"entry point {entry_point!r} of {env_id!r} is not a 'module:Class' string")
    with _lock:
        if not override and env_id in _REGISTRY:
            raise ConfigError(
                f"env id {env_id!r} is registered already (by {_REGISTRY[env_id].source}, as "
                f"{_REGISTRY[env_id].entry_point}); pass override=True to replace it")
        _REGISTRY[env_id] = EnvInfo(env_id, entry_point, description, source)
        gym.registry.pop(f"{NAMESPACE}/{env_id}", None)  # an override replaces it silently
        gym.register(id=f"{NAMESPACE}/{env_id}", entry_point=entry_point, kwargs=kwargs,
                     disable_env_checker=False,
                     vector_entry_point=functools.partial(TaskVectorEnv, env_id))


def load_plugins() -> None:
    """Register every ``taskgym.envs`` entry point once per process (the first id wins:
    a second package claiming an id registered already is skipped with a warning)."""
    global _plugins_loaded
    with _lock:
        if _plugins_loaded:
            return
        _plugins_loaded = True
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            source = f"package {ep.dist.name}" if ep.dist is not None else "an entry point"
            if ep.name in _REGISTRY:
                if _REGISTRY[ep.name].entry_point != ep.value:
                    warnings.warn(
                        f"{source} registers env id {ep.name!r} as {ep.value}, which "
                        f"{_REGISTRY[ep.name].source} registered already; keeping the first",
                        RuntimeWarning, stacklevel=2)
                continue
            register(ep.name, ep.value, source=source)


def _bare(env_id: str) -> str:
    return env_id.split("/", 1)[1] if env_id.startswith(NAMESPACE + "/") else env_id


def _description(info: EnvInfo) -> str:
    if info.description:
        return info.description
    module, _, name = info.entry_point.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        return f"(cannot be loaded: {exc})"
    text = getattr(cls, "description", "") or (cls.__doc__ or "").strip().split("\n")[0]
    return str(text)


def env_classes() -> dict[str, Any]:
    """Every registered id with its class, imported now (``taskgym doctor`` and ``taskgym
    images build`` ask each env for its lines and its image folder); an id whose class cannot
    be imported is left out."""
    load_plugins()
    found = {}
    for info in sorted(_REGISTRY.values(), key=lambda i: i.id):
        module, _, name = info.entry_point.partition(":")
        try:
            found[info.id] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return found


def image_folders() -> dict[str, Path]:
    """The Dockerfile folders the registered envs declare (``image_folder``), by env id;
    relative ones are under taskgym's ``envs/``."""
    folders = {}
    for env_id, cls in env_classes().items():
        folder = getattr(cls, "image_folder", None)
        if folder is not None:
            folders[env_id] = envs_dir() / folder
    return folders


def list_envs() -> dict[str, str]:
    """Every registered id with its one-line description."""
    load_plugins()
    return {info.id: _description(info) for info in sorted(_REGISTRY.values(), key=lambda i: i.id)}


def make(env_id: str, **kwargs: Any) -> TaskMethods:
    """Create a registered env (``"my-env-v0"`` or ``"taskgym/my-env-v0"``).

    Keyword arguments go to the env (``tasks``, ``sandbox``, ``max_steps``,
    ``render_mode``...). Unknown ids raise :class:`UnknownEnvError` naming a close match,
    if there is one, and every registered id. The env comes in Gymnasium's usual wrappers
    under :class:`~taskgym.core.wrappers.TaskMethods`, which forwards taskgym's async,
    snapshot and fork methods.
    """
    return TaskMethods(gym.make(f"{NAMESPACE}/{_registered(env_id)}", **kwargs))


def make_vec(env_id: str, num_envs: int = 1, *,
             vectorization_mode: str = "vector_entry_point", **kwargs: Any
             ) -> gym.vector.VectorEnv[Any, Any, Any]:
    """A vector env of ``num_envs`` envs of ``env_id``, through ``gymnasium.make_vec``.

    By default taskgym's own, :class:`~taskgym.core.vector.TaskVectorEnv` (its keywords
    ``autoreset_mode``, ``max_workers`` and ``stepping`` go in ``kwargs`` beside the envs'
    own);
    ``vectorization_mode="sync"`` or ``"async"`` gives Gymnasium's (their options in
    ``vector_kwargs``). Unknown ids raise as :func:`make` does.
    """
    return gym.make_vec(f"{NAMESPACE}/{_registered(env_id)}", num_envs=num_envs,
                        vectorization_mode=vectorization_mode, **kwargs)


def _registered(env_id: str) -> str:
    """``env_id`` without the namespace, if it is registered; else :class:`UnknownEnvError`."""
    load_plugins()
    name = _bare(env_id)
    if name not in _REGISTRY:
        if not _REGISTRY:
            raise UnknownEnvError(
                f"no taskgym env {env_id!r}: no env is registered at all, so taskgym's package "
                f"metadata is missing; install it (pip install -e . in a checkout)")
        near = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=SUGGEST_CUTOFF)
        hint = f" Did you mean {near[0]!r}?" if near else ""
        raise UnknownEnvError(
            f"no taskgym env {env_id!r}.{hint} Registered: {', '.join(sorted(_REGISTRY))}")
    return name


load_plugins()
