"""Env ids, registered with Gymnasium under the ``taskgym`` namespace.

Registration imports nothing heavy: each id points at a ``"module:Class"`` string. Other
packages add their own envs through the ``taskgym.envs`` entry-point group; each entry
point names a callable that takes no argument and calls :func:`register`.
"""

from __future__ import annotations

import difflib
import threading
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import gymnasium as gym

from taskgym.errors import UnknownEnvError

__all__ = ["EnvInfo", "NAMESPACE", "list_envs", "make", "register"]

NAMESPACE = "taskgym"
ENTRY_POINT_GROUP = "taskgym.envs"
SUGGEST_CUTOFF = 0.75
"""How alike (difflib ratio) an unknown id and a registered one must be for "did you mean":
a typo ("coding-termnal-v0": 0.94) is; a shared ``-v0`` suffix ("nope-v0" and
"finance-pdf-v0": 0.48) is not."""


@dataclass(frozen=True)
class EnvInfo:
    """A registered env: its id, the class that makes it, and one line about it."""

    id: str
    entry_point: str
    description: str


_REGISTRY: dict[str, EnvInfo] = {}
_plugins_loaded = False
_lock = threading.Lock()

_BUILTIN = (
    EnvInfo("coding-terminal-v0", "taskgym.domains.coding:CodingEnv",
            "Solve a programming or ops task in a sandboxed shell; hidden tests decide."),
    EnvInfo("cad-cadquery-v0", "taskgym.domains.cad:CadEnv",
            "Write a CadQuery script for a described part; geometry (IoU) decides."),
    EnvInfo("finance-pdf-v0", "taskgym.domains.finance:FinanceEnv",
            "Answer questions about financial PDF filings; normalised numbers decide."),
)


def register(env_id: str, entry_point: str, description: str, **kwargs: Any) -> None:
    """Make ``env_id`` available to :func:`make` and to ``gymnasium.make("taskgym/<id>")``."""
    _REGISTRY[env_id] = EnvInfo(env_id, entry_point, description)
    gym.register(id=f"{NAMESPACE}/{env_id}", entry_point=entry_point, kwargs=kwargs,
                 disable_env_checker=False)


def _load_plugins() -> None:
    global _plugins_loaded
    with _lock:
        if _plugins_loaded:
            return
        _plugins_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        ep.load()()


def _bare(env_id: str) -> str:
    return env_id.split("/", 1)[1] if env_id.startswith(NAMESPACE + "/") else env_id


def list_envs() -> dict[str, str]:
    """Every registered id with its one-line description."""
    _load_plugins()
    return {info.id: info.description for info in sorted(_REGISTRY.values(), key=lambda i: i.id)}


def make(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    """Create a registered env (``"coding-terminal-v0"`` or ``"taskgym/coding-terminal-v0"``).

    Keyword arguments go to the env (``tasks``, ``sandbox``, ``max_steps``,
    ``render_mode``...). Unknown ids raise :class:`UnknownEnvError` naming a close match,
    if there is one, and every registered id.
    """
    name = _bare(env_id)
    if name not in _REGISTRY:
        _load_plugins()
    if name not in _REGISTRY:
        near = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=SUGGEST_CUTOFF)
        hint = f" Did you mean {near[0]!r}?" if near else ""
        raise UnknownEnvError(
            f"no taskgym env {env_id!r}.{hint} Registered: {', '.join(sorted(_REGISTRY))}")
    return gym.make(f"{NAMESPACE}/{name}", **kwargs)


for _info in _BUILTIN:
    register(_info.id, _info.entry_point, _info.description)
