"""What can run on this machine: backends, limits and the tools envs need, with fixes.

Each registered env contributes its own lines (``doctor_checks`` of
:class:`~taskgym.core.env_needs.EnvNeeds`: its modules, its programs), so this module names no
domain. The fixes are the words a reset's preflight says when a grader's need is missing
(:mod:`taskgym.core.preflight`: one source for both)."""

from __future__ import annotations

import os
import shutil
import sys

from taskgym.core.env_needs import Check
from taskgym.core.preflight import image_fix
from taskgym.core.registry import env_classes

__all__ = ["Check", "leftovers_check", "run_checks"]


def _cgroups() -> Check:
    from taskgym.sandbox import probe_cgroups

    version, error = probe_cgroups()
    if error is None:
        return Check("cgroups", True, f"cgroup v{version}: memory and pids limits per sandbox")
    return Check("cgroups", False, f"cgroup v{version} not writable ({error.strerror or error}); "
                 "falling back to rlimits",
                 "run as root, or on cgroup v2 with systemd delegation "
                 "(systemd-run --user --scope -p Delegate=yes taskgym ...)")


def _step_calls() -> Check:
    from taskgym.sandbox import step_calls_implementation

    implementation = step_calls_implementation()
    if implementation == "c":
        return Check("sandbox: step calls", True, "compiled helper (_syscalls)")
    return Check("sandbox: step calls", False,
                 f"{implementation} fallback: the helper was not compiled at install, "
                 "so steps cost more host CPU, most with many threads",
                 "install gcc, then reinstall taskgym (pip install --force-reinstall --no-deps ...)",
                 optional=True)


def _docker_checks() -> list[Check]:
    """Engine reachable, and which images exist (the docker backend is optional)."""
    from taskgym.sandbox.docker import DockerBackend

    problem = DockerBackend.check()
    if problem is not None:
        return [Check("sandbox: docker", False, problem.split(". ")[0],
                      "sudo scripts/docker_setup.sh (the administrator's step: installs docker.io "
                      "and debootstrap, starts dockerd), then, from the Python that runs "
                      "taskgym: taskgym images build", optional=True)]
    import docker

    from taskgym.core.registry import image_folders
    from taskgym.sandbox.docker.host_python_image import host_python_mismatch
    from taskgym.sandbox.docker.images import (
        BASE_IMAGE,
        HOST_PYTHON_IMAGE,
        add_image_folders,
        env_ids_with_images,
        env_image,
        local_tag,
    )

    add_image_folders(image_folders())  # a plugin's own images too
    client = docker.from_env()
    try:
        version = client.version().get("Version", "?")
        have = {tag for image in client.images.list() for tag in image.tags}
        mismatch = host_python_mismatch(client)
    finally:
        client.close()
    checks = [Check("sandbox: docker", True, f"engine {version} reachable", optional=True)]
    wanted = [(BASE_IMAGE, ""), *((env_image(e), e) for e in env_ids_with_images()),
              (HOST_PYTHON_IMAGE, "host-python")]
    for image, env_id in wanted:
        tag = local_tag(image)
        present = f"{tag}:latest" in have
        checks.append(Check(f"docker image: {tag}", present, "built" if present else "missing",
                            image_fix(env_id), optional=True))
    if f"{local_tag(HOST_PYTHON_IMAGE)}:latest" in have and mismatch is None:
        checks.append(Check("docker: host-python matches this Python", True,
                            f"packed from {sys.executable} after its newest package",
                            optional=True))
    elif mismatch is not None:
        checks.append(Check(
            "docker: host-python matches this Python", False,
            f"{local_tag(HOST_PYTHON_IMAGE)} does not match {sys.executable}: {mismatch}; the env "
            "images built on it run another Python's packages",
            "taskgym images build (from this Python: it renews host-python and the env images "
            "on it; another Python's images can live beside, see TASKGYM_IMAGE_NAMESPACE in "
            "docs/docker.md)", optional=True))
    return checks


def run_checks() -> list[Check]:
    """Every check, in the order ``taskgym doctor`` prints them."""
    from taskgym.sandbox.local import LocalBackend

    checks = []
    problem = LocalBackend.check()
    bwrap = shutil.which("bwrap")
    checks.append(Check("sandbox: local (bubblewrap)", problem is None,
                        problem or f"{bwrap}: namespaces usable", "" if problem is None else
                        "see the message above"))
    checks.append(_cgroups())
    checks.append(_step_calls())
    checks.append(Check("user", True, "root" if os.geteuid() == 0 else
                        f"uid {os.geteuid()} (unprivileged user namespaces)"))
    for env_id, cls in env_classes().items():  # each env's own lines
        checks.extend(cls.doctor_checks(env_id))
    checks.extend(_docker_checks())
    checks.append(leftovers_check())
    return checks


def leftovers_check() -> Check:
    """Cgroups and folders of sandboxes whose controller died (killed by SIGKILL, say). The
    next sandbox start reaps them anyway; ``taskgym doctor --reap`` does it now."""
    from taskgym.sandbox import leftovers

    found = leftovers()
    if not found:
        return Check("leftovers of dead runs", True, "none")
    shown = ", ".join(str(p) for p in found[:3]) + (f" and {len(found) - 3} more"
                                                   if len(found) > 3 else "")
    return Check("leftovers of dead runs", False, f"{len(found)}: {shown}",
                 "taskgym doctor --reap (the next sandbox start also reaps them)",
                 optional=True)
