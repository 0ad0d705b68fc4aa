"""What a ``host_python`` sandbox sees of the Python that runs taskgym: the interpreter and
the folders on its import path, never a task's hidden material.

Only what that interpreter needs is shown, read-only and at the same paths: the folders of
its executable, each prefix's ``pyvenv.cfg`` and the shared libraries at the top of its
``lib/``, and the folders of its default import path (``python3 -I``: the standard library,
``lib-dynload`` and every ``site-packages``, with what their ``.pth`` files add). The rest
of an installation (``src/`` checkouts, ``share/``, a user site, ``PYTHONPATH``, and a venv's
base's ``site-packages``, which the venv does not import from) stays out,
and so does every import path entry outside the interpreter's prefixes (an editable install's
``src/``, taskgym's or another project's): no host folder beyond the installation goes in.

Inside what is shown, every installation of taskgym is covered by an empty folder, wherever
it lies and whichever copy the host runs: any folder named ``taskgym`` or holding taskgym's
distribution metadata, any taskgym checkout (a ``pyproject.toml`` naming it, with its
``tests/`` and ``envs/``), any task folder (one holding a ``task.toml``: tests, references,
answers, oracle solutions), and this process's own ``envs/`` and task cache. The same search
covers the distribution's Python folders in ``/usr``. The docker backend's
``taskgym/host-python`` image is packed from this view.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from taskgym.errors import ConfigError
from taskgym.paths import cache_dir, envs_dir

__all__ = ["PythonView", "host_python_view", "packages_installed_at", "python_view"]

_QUERY = ("import json, sys; print(json.dumps({'prefixes': [sys.prefix, sys.base_prefix, "
          "sys.exec_prefix, sys.base_exec_prefix], 'path': sys.path}))")
_SYSTEM_PYTHON = ("/usr/lib/python3", "/usr/lib64/python3")
"""Where the distribution's Python packages lie in the sandbox's ``/usr`` (searched too)."""
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg")
_SITE_FOLDERS = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class PythonView:
    """The host paths a ``host_python`` sandbox shows, and what inside them is covered."""

    executable: str
    """The interpreter, as the sandbox's ``python3`` (its folder goes first on ``PATH``)."""
    binds: tuple[str, ...]
    """Folders and files shown read-only at the same path, none inside another."""
    hidden: tuple[str, ...]
    """Folders inside ``binds`` (or the sandbox's ``/usr``) covered by an empty folder."""
    packages: tuple[str, ...] = ()
    """The ``site-packages`` (and ``dist-packages``) folders on the interpreter's import path."""


@functools.cache
def host_python_view() -> PythonView:
    """The view of the interpreter running taskgym (computed once per process)."""
    return python_view(sys.executable)


def python_view(executable: str) -> PythonView:
    """The view of the interpreter ``executable`` (asked for its prefixes and import path)."""
    try:
        answer = subprocess.run([executable, "-I", "-c", _QUERY], capture_output=True,
                                text=True, timeout=120, check=True).stdout
        info = json.loads(answer)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise ConfigError(f"could not ask the Python at {executable} for its paths: {exc}") from exc
    prefixes = {os.path.realpath(p) for p in info["prefixes"]}
    binds: set[str] = set()
    for path in (executable, os.path.realpath(executable)):
        binds.add(os.path.dirname(os.path.abspath(path)))
    for prefix in prefixes:
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            binds.add(os.path.join(prefix, "pyvenv.cfg"))
        binds.update(_shared_libraries(Path(prefix) / "lib"))
    for entry in info["path"]:  # host folders beyond the installation never go in
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.exists(real) and any(_within(real, prefix) for prefix in prefixes):
            binds.add(real)
    shown = _outermost(path for path in binds if not _in_system_usr(path))
    on_path = {os.path.realpath(entry) for entry in info["path"] if entry}
    unused = [os.path.join(entry, name) for entry in on_path for name in _SITE_FOLDERS
              if os.path.isdir(os.path.join(entry, name))
              and os.path.join(entry, name) not in on_path
              and any(_within(entry, top) for top in shown)]  # a venv's base's packages
    hidden = _outermost([*_hidden_in([*shown, *_system_python_dirs()]), *unused])
    shown = tuple(path for path in shown if not any(_within(path, h) for h in hidden))
    packages = tuple(sorted(path for path in on_path
                            if os.path.basename(path) in _SITE_FOLDERS and os.path.isdir(path)))
    return PythonView(executable, shown, hidden, packages)


def packages_installed_at(view: PythonView) -> float:
    """When the newest distribution in ``view``'s ``site-packages`` was installed (the newest
    modification time of their ``.dist-info`` / ``.egg-info`` folders; taskgym's own left out,
    as it never goes into a sandbox); 0 when there is none."""
    newest = 0.0
    for folder in view.packages:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(_METADATA_SUFFIXES) and not entry.name.startswith(
                    ("taskgym-", "taskgym.")):
                try:
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
                except OSError:
                    continue
    return newest


def _shared_libraries(lib: Path) -> list[str]:
    """The shared libraries at the top of a prefix's ``lib/`` (``libpython3.11.so.1.0``, or
    a conda environment's), and the links to them."""
    try:
        return [str(path) for path in lib.iterdir() if ".so" in path.name and path.is_file()]
    except OSError:
        return []


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _in_system_usr(path: str) -> bool:
    """Inside the ``/usr`` every local sandbox shows anyway (``/usr/local`` is not)."""
    return _within(path, "/usr") and not _within(path, "/usr/local")


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(_within(path, k) for k in kept):
            kept.append(path)
    return tuple(sorted(kept))


def _system_python_dirs() -> list[str]:
    return sorted(str(p) for base in _SYSTEM_PYTHON for p in Path(base).parent.glob(
        Path(base).name + "*") if p.is_dir())


def _is_checkout(folder: Path) -> bool:
    try:
        text = (folder / "pyproject.toml").read_text(errors="replace")
    except OSError:
        return False
    return any(line.replace(" ", "") in ('name="taskgym"', "name='taskgym'")
               for line in text.splitlines())


def _hidden_in(roots: list[str]) -> tuple[str, ...]:
    """Every folder of taskgym material under ``roots`` (links are not followed)."""
    found: set[str] = set()
    own: list[Path] = [cache_dir()]
    try:
        own.append(envs_dir())
    except FileNotFoundError:
        pass
    for path in own:
        real = os.path.realpath(path)
        if any(_within(real, root) for root in roots):
            found.add(real)
    for root in roots:
        if not os.path.isdir(root) or os.path.islink(root):
            continue
        for folder, dirs, files in os.walk(root):
            if "task.toml" in files or ("pyproject.toml" in files and _is_checkout(Path(folder))):
                found.add(folder)
                dirs.clear()
                continue
            for name in list(dirs):
                if name == "taskgym" or (name.startswith(("taskgym-", "taskgym.")) and
                                         name.endswith(_METADATA_SUFFIXES)):
                    found.add(os.path.join(folder, name))
                    dirs.remove(name)
    return _outermost(found)
