"""``taskgym images build``: the docker backend's images for the Python that runs taskgym.

In order: the base image (when missing, or asked to be redone), the host-python image (when
an env to build starts from it, or it is asked for, and it is missing or made from another
interpreter or before a package installed since: :func:`host_python_mismatch`), then each
env's image. A failed image is reported with its cause and the others still build; an image
whose parent failed is reported as such, without a build that could only fail again.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from taskgym.errors import TaskgymError
from taskgym.sandbox.docker.host_python_image import build_host_python, host_python_mismatch
from taskgym.sandbox.docker.images import (
    BASE_IMAGE,
    HOST_PYTHON_IMAGE,
    base_images,
    build_base,
    build_env_image,
    env_ids_with_images,
    env_image,
    image_exists,
    image_folder,
    local_tag,
)

__all__ = ["HOST_PYTHON_TARGET", "ImageOutcome", "build_images", "image_targets"]

HOST_PYTHON_TARGET = "host-python"
"""The target name of the host-python image (``taskgym images build host-python``)."""


@dataclass(frozen=True)
class ImageOutcome:
    """One image of a build: its target (``base``, ``host-python`` or an env id), its tag
    on this engine, and why it failed (``None``: built or already current)."""

    target: str
    tag: str
    error: str | None = None


def image_targets(env_id: str | None) -> list[str]:
    """What ``taskgym images build [env_id]`` builds, in order: ``base``, ``host-python``
    when asked for or when an env to build starts from it, then the envs."""
    if env_id == HOST_PYTHON_TARGET:
        return ["base", HOST_PYTHON_TARGET]
    envs = [env_id] if env_id else env_ids_with_images()
    wants_python = any(_needs_host_python(env) for env in envs)
    return ["base", *([HOST_PYTHON_TARGET] if wants_python else []), *envs]


def _needs_host_python(env_id: str) -> bool:
    dockerfile = image_folder(env_id) / "Dockerfile"
    return dockerfile.is_file() and HOST_PYTHON_IMAGE in base_images(dockerfile)


def build_images(client: Any, targets: list[str], *, rebuild_base: bool = False,
                 rebuild_python: bool = False, python: str | None = None,
                 log: Callable[[str], Any] = print) -> Iterator[ImageOutcome]:
    """Build ``targets`` (see :func:`image_targets`) for the interpreter ``python`` (default:
    the one running taskgym), yielding each one's outcome as it ends."""
    failed: set[str] = set()
    for target in targets:
        if target == "base":
            outcome = _attempt(target, local_tag(BASE_IMAGE),
                               lambda: build_base(client, force=rebuild_base, log=log))
        elif target == HOST_PYTHON_TARGET:
            outcome = _host_python(client, "base" in failed, rebuild_python, python, log)
        else:
            tag = local_tag(env_image(target))
            parent = HOST_PYTHON_TARGET if _needs_host_python(target) else "base"
            if parent in failed or "base" in failed:
                parent_tag = local_tag(HOST_PYTHON_IMAGE if parent != "base" else BASE_IMAGE)
                outcome = ImageOutcome(target, tag, f"not built: {parent_tag}, which it starts "
                                       "from, failed (above)")
            else:
                outcome = _attempt(target, tag, partial(build_env_image, client, target, log=log))
        if outcome.error is not None:
            failed.add(target)
        yield outcome


def _host_python(client: Any, base_failed: bool, rebuild: bool, python: str | None,
                 log: Callable[[str], Any]) -> ImageOutcome:
    tag = local_tag(HOST_PYTHON_IMAGE)
    if base_failed:
        return ImageOutcome(HOST_PYTHON_TARGET, tag,
                            f"not built: {local_tag(BASE_IMAGE)}, which it starts from, failed")
    reason = "asked for" if rebuild else None
    if reason is None and not image_exists(client, tag):
        reason = "missing"
    if reason is None:
        reason = host_python_mismatch(client, python)
    if reason is None:
        log(f"{tag}: present, packed from this Python after its newest package")
        return ImageOutcome(HOST_PYTHON_TARGET, tag)
    log(f"{tag}: building ({reason})")
    return _attempt(HOST_PYTHON_TARGET, tag, lambda: build_host_python(client, python, log=log))


def _attempt(target: str, tag: str, build: Callable[[], object]) -> ImageOutcome:
    import docker.errors

    try:
        build()
    except (TaskgymError, docker.errors.DockerException, subprocess.CalledProcessError,
            OSError) as exc:
        return ImageOutcome(target, tag, f"{type(exc).__name__}: {exc}")
    return ImageOutcome(target, tag)
