"""What an env needs on this machine, how to install it, and the lines ``taskgym doctor`` prints.

An env declares its needs as data on its class (:class:`EnvNeeds`): Python modules
(:attr:`~EnvNeeds.requires`, and :attr:`~EnvNeeds.local_requires` for the local sandbox, which
runs them with this Python) and programs on this host (:attr:`~EnvNeeds.requires_programs`,
engines such as ``godot3-server``, with the system package that gives each). Making the env
raises :class:`~taskgym.errors.MissingDependencyError` naming what is missing and how to get it:
``pip install 'taskgym[<extra>]'`` for taskgym's own envs, the plugin's own package for a third
party's (:meth:`~EnvNeeds.install_hint`). ``taskgym doctor`` prints each registered env's
:meth:`~EnvNeeds.doctor_checks`, so :mod:`taskgym.doctor` names no domain.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from taskgym.core.preflight import Requirement, extra_fix, system_fix
from taskgym.errors import MissingDependencyError

__all__ = ["Check", "EnvNeeds", "program_check"]


@dataclass(frozen=True)
class Check:
    """One finding of ``taskgym doctor``: what was checked, whether it is usable, how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    optional: bool = False
    """Not needed by the default setup (coding-terminal-v0 on the local sandbox): the docker
    backend, the cad and pdf extras, ... A missing optional part is reported, not a failure."""


def program_check(name: str, argv: list[str], package: str, optional: bool = True) -> Check:
    """Whether ``argv`` (a program in ``/usr/bin`` or ``/bin``, which the local sandbox
    sees) runs, with its first line of output; the fix installs the system's ``package``."""
    path = shutil.which(argv[0], path="/usr/bin:/bin")
    if path is None:
        return Check(name, False, f"{argv[0]} missing from /usr/bin", system_fix(package),
                     optional=optional)
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        return Check(name, False, (proc.stderr or proc.stdout).strip()[:200],
                     system_fix(package), optional=optional)
    return Check(name, True, (proc.stdout or proc.stderr).strip().splitlines()[0][:80],
                 optional=optional)


class EnvNeeds:
    """The needs part of :class:`~taskgym.core.env.TaskEnv`: declarations, the check at
    construction, the install hint and the doctor's lines."""

    domain: ClassVar[str]
    requires: ClassVar[tuple[str, ...]] = ()
    """Modules this process must be able to import to run the env."""
    local_requires: ClassVar[tuple[str, ...]] = ()
    """Modules the local sandbox needs from this process's Python (``host_python``)."""
    requires_programs: ClassVar[Mapping[str, str]] = {}
    """Programs this host must have on its ``PATH`` to run the env (engines such as
    ``godot3-server``), each with the system package that gives it."""
    extra: ClassVar[str | None] = None
    """The taskgym extra that installs :attr:`requires` (``pip install 'taskgym[<extra>]'``);
    only for taskgym's own envs."""
    package: ClassVar[str | None] = None
    """The pip package that installs a third party's env with its modules; by default the
    distribution its module comes from."""
    doctor_modules: ClassVar[tuple[str, ...]] = ()
    """Distributions ``taskgym doctor`` reports beside :attr:`requires` (a generator's own)."""
    grader_requirements: ClassVar[tuple[Requirement, ...]] = ()
    """What the grader needs in its sandbox's view (programs, Python modules), checked by
    ``reset`` before an episode starts (see ``grader_needs``)."""

    @classmethod
    def install_hint(cls) -> str:
        """How to install the env's modules: taskgym's extra for taskgym's own envs, else the
        plugin's own package (:attr:`package`, or the distribution of the env's module)."""
        if cls.__module__.split(".")[0] == "taskgym":
            return extra_fix(cls.extra) if cls.extra else "install them"
        package = cls.package
        if package is None:
            top = cls.__module__.split(".")[0]
            found = importlib.metadata.packages_distributions().get(top)
            package = found[0] if found else top
        return f"pip install '{package}'"

    @classmethod
    def missing_modules(cls, local: bool) -> list[str]:
        """The modules of :attr:`requires` (and :attr:`local_requires` when ``local``) this
        Python cannot import."""
        needed = [*cls.requires, *(cls.local_requires if local else ())]
        return [m for m in dict.fromkeys(needed) if importlib.util.find_spec(m) is None]

    @classmethod
    def missing_programs(cls) -> dict[str, str]:
        """The programs of :attr:`requires_programs` not on this host's ``PATH``, with their
        packages."""
        return {p: pkg for p, pkg in cls.requires_programs.items() if shutil.which(p) is None}

    @classmethod
    def check_needs(cls, local: bool) -> None:
        """Raise :class:`MissingDependencyError` naming what is missing and how to install it."""
        programs = cls.missing_programs()
        if programs:
            raise MissingDependencyError(
                f"{cls.__name__} needs {', '.join(programs)} on this host: "
                f"{system_fix(' '.join(dict.fromkeys(programs.values())))}")
        missing = cls.missing_modules(local)
        if missing:
            where = (" (the local sandbox runs them with this Python)"
                     if set(missing) <= set(cls.local_requires) else "")
            raise MissingDependencyError(
                f"{cls.__name__} needs {', '.join(missing)}{where}: {cls.install_hint()}")

    @classmethod
    def doctor_checks(cls, env_id: str) -> list[Check]:
        """What ``taskgym doctor`` prints for this env: one line for its modules (with their
        versions) and one per program. All optional: only ``env_id`` needs them."""
        checks = []
        modules = (*cls.requires, *cls.local_requires, *cls.doctor_modules)
        if modules:
            found, missing = [], []
            for name in dict.fromkeys(modules):
                try:
                    found.append(f"{name} {importlib.metadata.version(name)}")
                except importlib.metadata.PackageNotFoundError:
                    missing.append(name)
            label = f"{cls.domain}: {', '.join(dict.fromkeys(modules))}"
            checks.append(Check(label, True, ", ".join(found)) if not missing else Check(
                label, False, f"missing {', '.join(missing)} (optional: only {env_id} needs it)",
                cls.install_hint(), optional=True))
        for program, system_package in cls.requires_programs.items():
            path = shutil.which(program)
            checks.append(Check(f"{cls.domain}: {program}", path is not None,
                                path or f"not installed ({env_id} needs it)",
                                system_fix(system_package), optional=True))
        return checks
