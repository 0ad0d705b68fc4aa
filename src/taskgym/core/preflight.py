"""Preflight: before an episode starts, is what its grader needs there?

A grader runs in a sandbox of its own (:mod:`taskgym.sandbox.grading`), which sees the host's
``/usr`` (the local backend), taskgym's own Python (``host_python``) or a container image.
When something it needs is missing there (pytest, a pytest plugin a test script asks for, a
domain's Python package), every grade of every episode would fail, the oracle's too. So
:meth:`TaskEnv.reset <taskgym.core.env.TaskEnv.reset>` asks the env what the task's grader
needs (:meth:`~taskgym.core.env.TaskEnv.grader_needs`, a :class:`GraderNeeds`) and
:func:`preflight` checks it in a sandbox of the grader's view, never in the agent's
workspace, and raises :class:`~taskgym.errors.GraderDependencyError` naming the fix
before the episode starts.

One probe runs per (backend, view, needs): the answer is cached in-process, so a reset pays
for it once (a sandbox start and one command), and never a step. The fixes are the words
``taskgym doctor`` prints (:data:`PYTEST` is the requirement both check).
"""

from __future__ import annotations

import shlex
import threading
import weakref
from dataclasses import dataclass

from taskgym.errors import GraderDependencyError
from taskgym.sandbox import Backend, SandboxSpec

__all__ = ["PYTEST", "PYTHON3", "GraderNeeds", "Requirement", "clear_cache", "extra_fix",
           "image_fix", "own_image_fix", "preflight", "system_fix"]


def system_fix(packages: str) -> str:
    """How to install the distribution's ``packages`` (the words ``taskgym doctor`` prints)."""
    return f"sudo apt-get install {packages}"


def extra_fix(extra: str) -> str:
    """How to install taskgym's ``extra`` (the words ``taskgym doctor`` prints)."""
    return f"pip install 'taskgym[{extra}]'"


def image_fix(env_id: str = "") -> str:
    """How to build the docker image of ``env_id`` (the words ``taskgym doctor`` prints)."""
    return f"taskgym images build {env_id}".rstrip()


def own_image_fix(image: str | None, env_image: str | None) -> str | None:
    """How to fix ``image`` when it lacks what the grader needs: build it again when it is the
    env's own (``env_image``, ``<namespace>/<env id>``), else ``None`` (the task's Dockerfile)."""
    if image is not None and image == env_image:
        return image_fix(image.rpartition("/")[2])
    return None


@dataclass(frozen=True)
class Requirement:
    """Programs and Python modules a grader needs, and what gives them."""

    name: str
    """What ``taskgym doctor`` calls the check (``"coding: python3 + pytest (system)"``)."""
    programs: tuple[str, ...] = ()
    """Commands found on the sandbox's ``PATH``."""
    modules: tuple[str, ...] = ()
    """Modules ``python3 -I`` imports there (a real module: an empty folder does not count)."""
    packages: str = ""
    """The distribution's packages that give them (``sudo apt-get install <packages>``)."""
    extra: str | None = None
    """The taskgym extra that gives the modules in taskgym's own Python (``host_python``)."""
    distribution: str = ""
    """The Python distribution that gives the modules (``pytest-json-ctrf``), when no
    ``packages`` of the system's do."""
    fix: str | None = None
    """The fix on this machine when neither ``packages`` nor ``extra`` says it."""
    in_env_image: bool = True
    """Whether the env's own image is built with it (then building the image again fixes
    it); a task's own need (a plugin its test.sh asks for) is not."""

    def host_fix(self) -> str:
        """The fix on this machine (the local backend's view: its ``/usr``, taskgym's Python)."""
        if self.extra is not None:
            return extra_fix(self.extra)
        if self.packages:
            return system_fix(self.packages)
        if self.fix is not None:
            return self.fix
        return f"install {', '.join((*self.programs, *self.modules))}"


PYTEST = Requirement("coding: python3 + pytest (system)", programs=("python3",),
                     modules=("pytest",), packages="python3 python3-pytest")
"""What the coding grader's runner needs (``taskgym doctor`` checks the same)."""
PYTHON3 = Requirement("coding: python3 (system)", programs=("python3",), packages="python3")
"""What the coding grader's runner needs to run a test script."""


@dataclass(frozen=True)
class GraderNeeds:
    """What one task's grader needs, in the view of its sandbox."""

    requirements: tuple[Requirement, ...]
    image: str | None = None
    """The grader's container image (container backends)."""
    host_python: bool = False
    """Whether the grader runs taskgym's own Python (its modules come from there)."""
    image_fix: str | None = None
    """How to fix the image when it lacks something (``taskgym images build <env id>``);
    ``None``: add it to the image's Dockerfile."""
    unknown: tuple[str, ...] = ()
    """What a static read could not tell (said in the error, never probed)."""


_UNKNOWN = "the probe timed out"
"""What :func:`_probe` answers when it could not tell (a loaded machine)."""
_cache: weakref.WeakKeyDictionary[Backend, dict[tuple[object, ...], str | None]] = \
    weakref.WeakKeyDictionary()
_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every probe's answer (after installing what was missing, in a long process)."""
    with _lock:
        _cache.clear()


def preflight(backend: Backend, needs: GraderNeeds, who: str) -> None:
    """Raise :class:`GraderDependencyError` when a requirement of ``needs`` is missing in the
    grader's view on ``backend`` (``who``: the env and task, for the message). Probed once per
    (backend, view, needs) in this process."""
    image = needs.image if backend.name != "local" else None  # the local view has no image
    key = (image, needs.host_python, needs.requirements)
    with _lock:
        known = _cache.setdefault(backend, {})
        probed = key in known
        problem = known.get(key)
    if not probed:
        problem = _probe(backend, needs, image)
        if problem is _UNKNOWN:  # the probe could not tell: the grade will (not cached)
            return
        with _lock:
            _cache.setdefault(backend, {})[key] = problem
    if problem is not None:
        raise GraderDependencyError(f"{who} cannot be graded here: {problem}")


def _probe(backend: Backend, needs: GraderNeeds, image: str | None) -> str | None:
    """What is missing in a sandbox of the grader's view, with its fix, or ``None``."""
    programs = sorted({p for r in needs.requirements for p in r.programs})
    modules = sorted({m for r in needs.requirements for m in r.modules})
    script = "; ".join(f"command -v {shlex.quote(p)} >/dev/null || echo program {shlex.quote(p)}"
                       for p in programs)
    if modules:
        check = ("import importlib, sys\n"
                 "for name in sys.argv[1:]:\n"
                 "    try:\n"
                 "        found = getattr(importlib.import_module(name), '__file__', None)\n"
                 "    except Exception:\n"
                 "        found = None\n"
                 "    if found is None:\n"
                 "        print('module', name)\n")
        script += ("; " if script else "") + (
            f"python3 -I -c {shlex.quote(check)} {' '.join(map(shlex.quote, modules))} "
            "2>/dev/null || echo python3 failed")
    if not script:
        return None
    spec = SandboxSpec(image=image, host_python=needs.host_python, memory_mb=1024)
    session = backend.start(spec)
    try:
        result = session.exec(script, timeout=60)
    finally:
        session.close()
    missing = set(result.stdout.splitlines()) - {""}
    if result.timed_out or result.restarted:
        return _UNKNOWN
    lacking = [r for r in needs.requirements
               if {f"program {p}" for p in r.programs} & missing
               or {f"module {m}" for m in r.modules} & missing
               or (r.modules and "python3 failed" in missing)]
    if not lacking:
        return None
    image_fix_of = needs.image_fix
    if image is None and needs.host_python and backend.name != "local":  # its Python's image
        image, image_fix_of = "taskgym/host-python", image_fix("host-python")
    view = (f"the image {image}" if image is not None
            else "taskgym's own Python" if needs.host_python else "this machine's /usr")
    parts = []
    for requirement in lacking:
        absent = [p for p in requirement.programs if f"program {p}" in missing] + \
                 [m for m in requirement.modules if f"module {m}" in missing]
        if view.startswith("the image"):
            wanted = requirement.packages or requirement.distribution or ", ".join(absent)
            fix = (requirement.in_env_image and image_fix_of) or \
                f"add {wanted} to the Dockerfile of {image} and build it again"
        else:
            fix = requirement.host_fix()
        parts.append(f"{requirement.name}: {', '.join(absent) or 'python3'} missing in "
                     f"{view}; fix: {fix}")
    doctor = "" if image is not None else " (taskgym doctor checks this machine)"
    unknown = f" (not checked, a static read cannot tell: {'; '.join(needs.unknown)})" \
        if needs.unknown else ""
    return "; ".join(parts) + doctor + unknown
