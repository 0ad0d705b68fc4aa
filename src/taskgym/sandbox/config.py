"""One frozen config per backend, told apart by ``type``, and the backend each one makes.

``sandbox="local"`` and ``sandbox="docker"`` are shorthands for ``LocalConfig()`` and
``DockerConfig()``; a mapping such as ``{"type": "docker", "pool_size": 4}`` is validated
into its config. The ``type`` names a backend registered in the ``taskgym.backends``
entry-point group (:mod:`taskgym.sandbox.backends`), whose class says its config
(``config_class``) and makes itself from one (``from_config``). Environment variables only
supply defaults (``TASKGYM_DOCKER_POOL``, ``TASKGYM_WARM_GRADERS``, ``TASKGYM_GRADER_ZYGOTE``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskgym.errors import ConfigError
from taskgym.sandbox.backends import backend_class, installed_backends

if TYPE_CHECKING:
    from taskgym.sandbox.base import Backend

__all__ = ["BackendConfig", "DockerConfig", "LocalConfig", "WarmGraderConfig", "backend_config",
           "get_backend", "grader_zygote_default", "warm_graders_default", "whole_number_env"]


def whole_number_env(name: str, default: int, minimum: int = 0, hint: str = "") -> int:
    """The environment variable ``name`` as a whole number of at least ``minimum``, else
    ``default`` when it is unset; any other value raises :class:`ConfigError` naming the
    variable (``hint`` is added to the message: what 0 means, say)."""
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value: int | None = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ConfigError(f"{name} must be a whole number >= {minimum}, not {text!r}{hint}")
    return value


def warm_graders_default() -> int:
    """``TASKGYM_WARM_GRADERS``, else the number of CPUs this process may use."""
    return whole_number_env("TASKGYM_WARM_GRADERS", max(1, len(os.sched_getaffinity(0))),
                            hint=" (0 turns warm graders off)")


class BackendConfig(BaseModel):
    """The base of every backend's config: frozen, no unknown fields, and the ``type`` that
    names its backend (each config narrows it to a ``Literal`` of its own name)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    """The backend's name in the ``taskgym.backends`` entry-point group."""


class WarmGraderConfig(BackendConfig):
    """What the local and docker configs say about their warm graders
    (:mod:`taskgym.sandbox.grading.warm`)."""

    warm_graders: int = Field(default_factory=warm_graders_default, ge=0, le=256)
    """Most pre-started graders kept waiting per kind of grader: the pool follows the live
    episodes that will grade, up to this; 0 turns warm graders off (each grade starts its
    sandbox with the grader's command). Default: ``TASKGYM_WARM_GRADERS``, else the CPU count."""
    warm_idle_sec: float = Field(default=60.0, gt=0)
    """A waiting grader that no live episode counts on is stopped after this long without a
    grade or a reset of its kind."""


def grader_zygote_default() -> bool:
    """``TASKGYM_GRADER_ZYGOTE`` (``1``: on, ``0``: off), else on."""
    text = os.environ.get("TASKGYM_GRADER_ZYGOTE", "1")
    if text not in ("0", "1"):
        raise ConfigError(f"TASKGYM_GRADER_ZYGOTE must be 0 or 1, not {text!r}")
    return text == "1"


class LocalConfig(WarmGraderConfig):
    """The bubblewrap sandbox on this machine (the default)."""

    type: Literal["local"] = "local"
    grader_zygote: bool = Field(default_factory=grader_zygote_default)
    """Whether a warm grade is forked by its kind's grader zygote
    (:mod:`taskgym.sandbox.local.zygote`: the grader's modules imported once per process);
    off, warm grades use the pool of pre-started graders. Default: ``TASKGYM_GRADER_ZYGOTE``
    (``0`` or ``1``), else on."""


def _pool_default() -> int:
    return whole_number_env("TASKGYM_DOCKER_POOL", 2, hint=" (0 starts each container on demand)")


class DockerConfig(WarmGraderConfig):
    """Hardened Docker containers (see docs/docker.md)."""

    type: Literal["docker"] = "docker"
    pool_size: int = Field(default_factory=_pool_default, ge=0, le=256)
    """Started containers kept ready per container shape; 0 starts each on demand
    (default: ``TASKGYM_DOCKER_POOL``, else 2)."""


def backend_config(choice: str | Mapping[str, Any] | BackendConfig) -> BackendConfig:
    """The config ``choice`` names (a backend's name, a mapping with its ``type``, or a config);
    raises :class:`ConfigError` saying what is accepted and which backends are installed."""
    if isinstance(choice, BackendConfig):
        return choice
    if isinstance(choice, str):
        choice = {"type": choice}
    if not isinstance(choice, Mapping):
        raise ConfigError(f"sandbox must be a backend name ({', '.join(installed_backends())}), a "
                          f"config or a Backend, not {type(choice).__name__}")
    kind = choice.get("type")
    if not isinstance(kind, str):
        raise ConfigError(f"a sandbox config needs its backend's name as 'type' (installed: "
                          f"{', '.join(installed_backends())}), not {dict(choice)!r}")
    config_class = backend_class(kind).config_class
    try:
        return config_class.model_validate(dict(choice))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"bad sandbox config {dict(choice)!r}: {problems}") from None


def get_backend(choice: str | Mapping[str, Any] | BackendConfig) -> Backend:
    """The backend for ``choice``; raises with install hints when it is unusable here."""
    config = backend_config(choice)
    return backend_class(config.type).from_config(config)
