"""What can run on this machine: backends, limits and the tools envs need, with fixes."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

__all__ = ["Check", "run_checks"]


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, whether it is usable, and how to fix it if not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def _cgroups() -> Check:
    from taskgym.sandbox._cgroups import CgroupLimits, _version

    version = _version()
    try:
        probe = CgroupLimits(f"{os.getpid()}-doctor-probe", 64 << 20, 64)
        probe.close()
        return Check("cgroups", True, f"cgroup v{version}: memory and pids limits per sandbox")
    except OSError as exc:
        return Check("cgroups", False, f"cgroup v{version} not writable ({exc.strerror or exc}); "
                     "falling back to rlimits",
                     "run as root, or on cgroup v2 with systemd delegation "
                     "(systemd-run --user --scope -p Delegate=yes taskgym ...)")


def _sandbox_tool(name: str, argv: list[str], package: str) -> Check:
    path = shutil.which(argv[0], path="/usr/bin:/bin")
    if path is None:
        return Check(name, False, f"{argv[0]} missing from /usr/bin",
                     f"sudo apt-get install {package}")
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        return Check(name, False, (proc.stderr or proc.stdout).strip()[:200],
                     f"sudo apt-get install {package}")
    return Check(name, True, (proc.stdout or proc.stderr).strip().splitlines()[0][:80])


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
    checks.append(Check("user", True, "root" if os.geteuid() == 0 else
                        f"uid {os.geteuid()} (unprivileged user namespaces)"))
    pytest_probe = "import pytest; print('pytest', pytest.__version__)"
    checks.append(_sandbox_tool("coding: python3 + pytest (system)",
                                ["/usr/bin/python3", "-c", pytest_probe], "python3 python3-pytest"))
    for tool, package in (("git", "git"), ("make", "make"), ("gcc", "gcc libc6-dev")):
        checks.append(_sandbox_tool(f"coding: {tool}", [tool, "--version"], package))
    checks.append(_cadquery())
    return checks


def _cadquery() -> Check:
    import importlib.metadata

    try:
        version = importlib.metadata.version("cadquery")
    except importlib.metadata.PackageNotFoundError:
        return Check("cad: cadquery", False, "not installed (cad-cadquery-v0 needs it)",
                     "pip install 'taskgym[cad]'")
    return Check("cad: cadquery", True, f"cadquery {version}")
