"""What can run on this machine: backends, limits and the tools envs need, with fixes.

The fixes are the words a reset's preflight says when a grader's need is missing
(:mod:`taskgym.core.preflight`: one source for both)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from taskgym.core.preflight import PYTEST, extra_fix, image_fix, system_fix

__all__ = ["Check", "leftovers_check", "run_checks"]


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, whether it is usable, and how to fix it if not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    optional: bool = False
    """Not needed by the default setup (coding-terminal-v0 on the local sandbox): the docker
    backend, the cad and pdf extras, ... A missing optional part is reported, not a failure."""


def _cgroups() -> Check:
    from taskgym.sandbox import probe_cgroups

    version, error = probe_cgroups()
    if error is None:
        return Check("cgroups", True, f"cgroup v{version}: memory and pids limits per sandbox")
    return Check("cgroups", False, f"cgroup v{version} not writable ({error.strerror or error}); "
                 "falling back to rlimits",
                 "run as root, or on cgroup v2 with systemd delegation "
                 "(systemd-run --user --scope -p Delegate=yes taskgym ...)")


def _sandbox_tool(name: str, argv: list[str], package: str) -> Check:
    path = shutil.which(argv[0], path="/usr/bin:/bin")
    if path is None:
        return Check(name, False, f"{argv[0]} missing from /usr/bin", system_fix(package))
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        return Check(name, False, (proc.stderr or proc.stdout).strip()[:200],
                     system_fix(package))
    return Check(name, True, (proc.stdout or proc.stderr).strip().splitlines()[0][:80])


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


def _pdf_extra() -> Check:
    from importlib.metadata import PackageNotFoundError, version

    found, missing = [], []
    for dist in ("pdfplumber", "pypdfium2", "reportlab", "fpdf2"):
        try:
            found.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            missing.append(dist)
    if missing:
        return Check("finance: pdf extra", False,
                     f"missing {', '.join(missing)} (optional: only finance-pdf-v0 needs it)",
                     extra_fix("pdf"), optional=True)
    return Check("finance: pdf extra", True, ", ".join(found))


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

    from taskgym.sandbox.docker.host_python_image import host_python_mismatch
    from taskgym.sandbox.docker.images import (
        BASE_IMAGE,
        HOST_PYTHON_IMAGE,
        env_ids_with_images,
        env_image,
        local_tag,
    )

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
    pytest_probe = ("import sys, pytest; sys.exit('pytest is an empty folder') if getattr("
                    "pytest, '__file__', None) is None else print('pytest', pytest.__version__)")
    checks.append(_sandbox_tool(PYTEST.name, ["/usr/bin/python3", "-I", "-c", pytest_probe],
                                PYTEST.packages))
    for tool, package in (("git", "git"), ("make", "make"), ("gcc", "gcc libc6-dev")):
        checks.append(_sandbox_tool(f"coding: {tool}", [tool, "--version"], package))
    checks.append(_cadquery())
    checks.append(_pdf_extra())
    engine = shutil.which("godot3-server")
    checks.append(Check("game: godot3-server", engine is not None, engine or "not installed (game-godot-v0 "
                        "needs it)", system_fix("godot3-server"), optional=True))
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


def _cadquery() -> Check:
    import importlib.metadata

    try:
        version = importlib.metadata.version("cadquery")
    except importlib.metadata.PackageNotFoundError:
        return Check("cad: cadquery", False,
                     "not installed (optional: only cad-cadquery-v0 needs it)",
                     extra_fix("cad"), optional=True)
    return Check("cad: cadquery", True, f"cadquery {version}")
