"""A task image's own working folder as a workspace's start state (docker backend).

A task may bring a Dockerfile whose image already holds files in its working folder; a docker
session's workspace is a fresh tmpfs over that folder, so the host exports the folder once
and seeds each workspace with it (:meth:`DockerBackend.image_workspace`).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from taskgym.paths import cache_dir, staging_for
from taskgym.sandbox.base import SandboxSpec
from taskgym.sandbox.docker.images import export_image_dir, folder_hash

if TYPE_CHECKING:
    from taskgym.sandbox.docker.backend import DockerBackend

__all__ = ["image_workspace"]


def image_workspace(backend: DockerBackend, spec: SandboxSpec, seed: Path | None) -> Path:
    """The working folder (``spec.workdir``) of the image of ``spec`` with ``seed`` copied
    over it, cached by image id and the content of ``seed``."""
    tag = backend.image(spec)
    image_id = backend.client.images.get(tag).id.removeprefix("sha256:")[:24]
    seed_hash = folder_hash(seed) if seed is not None else "-"
    key = hashlib.sha256(f"{image_id}\0{seed_hash}".encode()).hexdigest()[:24]
    dest = cache_dir() / "image-workspaces" / key
    if dest.is_dir():
        return dest
    with staging_for(dest) as staging:
        if not export_image_dir(backend.client, tag, spec.workdir, staging):
            staging.mkdir()
        if seed is not None:
            shutil.copytree(seed, staging, symlinks=True, dirs_exist_ok=True)
    return dest
