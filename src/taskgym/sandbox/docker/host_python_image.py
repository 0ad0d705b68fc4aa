"""The ``taskgym/host-python`` image: the base plus a copy of what a local sandbox shows of a
Python (:mod:`taskgym.sandbox.host.python_view`: its executable, shared libraries and import path,
every taskgym installation and task folder left out), at the same paths, for envs whose spec
asks for ``host_python`` (CadQuery, pdfplumber...) and the env images built on it.

The image's ``PATH`` starts with the interpreter's own folder, and sessions and env builds get
the image's ``PATH``: a venv's ``python3`` finds its ``pyvenv.cfg`` (and so its packages)
only when started at its own path, never through a link elsewhere. Labels record the
interpreter it was packed from and the install time of its newest package, which
:func:`host_python_mismatch` compares with a running Python (``taskgym doctor``; ``taskgym
images build`` renews a mismatched image).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from taskgym.errors import SandboxUnavailableError
from taskgym.sandbox.docker.images import (
    BASE_IMAGE,
    HOST_PYTHON_IMAGE,
    build_base,
    docker_build,
    image_exists,
    local_tag,
)
from taskgym.sandbox.host.python_view import packages_installed_at, python_view

__all__ = ["PACKAGES_LABEL", "PYTHON_LABEL", "build_host_python", "host_python_mismatch"]

PYTHON_LABEL = "org.taskgym.python"
"""The host-python image's label: the interpreter it was packed from."""
PACKAGES_LABEL = "org.taskgym.python-packages"
"""The host-python image's label: the install time (epoch seconds) of its newest package."""


def build_host_python(client: Any, python: str | None = None, log: Any = print) -> str:
    """Build ``taskgym/host-python``: the base plus the view of ``python`` (default: the
    interpreter running taskgym; see :mod:`taskgym.sandbox.host.python_view`: what a local sandbox
    shows of it, taskgym left out), labelled with that interpreter and its packages' time."""
    executable = python or sys.executable
    view = python_view(executable)
    under_tmp = [path for path in view.binds if path == "/tmp" or path.startswith("/tmp/")]
    if under_tmp:
        raise SandboxUnavailableError(
            f"the Python running taskgym lies under /tmp ({under_tmp[0]}), which every container "
            "covers with its own empty /tmp; make the image from an interpreter installed "
            "elsewhere (e.g. `python3 -m venv ~/.venvs/taskgym`)")
    base, tag = local_tag(BASE_IMAGE), local_tag(HOST_PYTHON_IMAGE)
    if not image_exists(client, base):
        build_base(client, log=log)
    log(f"{tag}: finding the system libraries its extension modules load")
    libraries = _missing_in_base(client, _host_libraries(view.binds))
    with tempfile.TemporaryDirectory(prefix="taskgym-host-python-") as tmp:
        context = Path(tmp)
        (context / "libraries.txt").write_text("".join(f"{path.lstrip('/')}\n" for path in libraries))
        log(f"{tag}: packing {len(view.binds)} folders and files of {executable} (without "
            f"taskgym) and {len(libraries)} system libraries the base lacks")
        subprocess.run(["tar", "-C", "/", "-cf", str(context / "python.tar"),
                        *(f"--exclude={path.lstrip('/')}" for path in view.hidden),
                        *(path.lstrip("/") for path in view.binds),
                        "-T", str(context / "libraries.txt")], check=True)
        (context / "libraries.txt").unlink()
        # PATH puts the interpreter's own folder first: a venv's python3 finds its pyvenv.cfg
        # only when started at its own path (sessions and env builds get the image's PATH)
        (context / "Dockerfile").write_text(
            f"FROM {base}\nADD python.tar /\nLABEL org.taskgym.host-python=\"1\"\n"
            f"LABEL {PYTHON_LABEL}={json.dumps(executable)}\n"
            f"LABEL {PACKAGES_LABEL}=\"{packages_installed_at(view):.0f}\"\n"
            f"ENV PATH={Path(executable).parent}:/usr/local/bin:/usr/bin:/bin\n")
        log(f"{tag}: docker build")
        docker_build(client, context, tag)
    return tag


def host_python_mismatch(client: Any, python: str | None = None) -> str | None:
    """Why the host-python image does not match ``python`` (default: the interpreter running
    taskgym): packed from another interpreter, or older than a package installed since;
    ``None`` when it matches or is not built."""
    import docker.errors

    executable = python or sys.executable
    try:
        labels = client.images.get(local_tag(HOST_PYTHON_IMAGE)).labels or {}
    except docker.errors.ImageNotFound:
        return None
    packed = labels.get(PYTHON_LABEL)
    if packed is None:
        return "it records no interpreter (made by an older taskgym)"
    if not _same_interpreter(packed, executable):
        return f"it was packed from {packed}, not from {executable}, the Python running taskgym"
    try:
        packed_at = float(labels.get(PACKAGES_LABEL, "0"))
    except ValueError:
        packed_at = 0.0
    installed_at = packages_installed_at(python_view(executable))
    if installed_at > packed_at + 1:
        return (f"packages were installed into {executable} since it was packed "
                f"({time.strftime('%Y-%m-%d %H:%M', time.localtime(installed_at))})")
    return None


def _same_interpreter(first: str, second: str) -> bool:
    """The same file, started from the same folder (``python`` and ``python3`` of one venv are;
    a venv's and its base's, though the same file, are not: each finds other packages)."""
    return (os.path.dirname(os.path.abspath(first)) == os.path.dirname(os.path.abspath(second))
            and os.path.realpath(first) == os.path.realpath(second))


def _host_libraries(shown: tuple[str, ...]) -> list[str]:
    """Shared libraries outside ``shown`` that the extension modules inside it load, as
    canonical paths (links and their targets)."""
    modules = [str(path) for top in shown for path in
               ([Path(top)] if Path(top).is_file() else Path(top).rglob("*.so*"))
               if path.is_file() and not path.is_symlink() and ".so" in path.name]
    found: set[str] = set()
    for start in range(0, len(modules), 200):
        listing = subprocess.run(["ldd", *modules[start : start + 200]], capture_output=True,
                                 text=True).stdout
        for path in re.findall(r"=> (/\S+)", listing):
            canonical = os.path.join(os.path.realpath(os.path.dirname(path)),
                                     os.path.basename(path))
            if not any(canonical == top or canonical.startswith(top.rstrip("/") + "/")
                       for top in shown):
                found.update({canonical, os.path.realpath(canonical)})
    return sorted(found)


def _missing_in_base(client: Any, paths: list[str]) -> list[str]:
    """Which of ``paths`` the base image lacks."""
    if not paths:
        return []
    script = 'for f in "$@"; do [ -e "$f" ] || [ -L "$f" ] || echo "$f"; done'
    output = client.containers.run(local_tag(BASE_IMAGE), ["/bin/sh", "-c", script, "sh", *paths],
                                   remove=True, network_mode="none")
    return [line for line in output.decode().splitlines() if line]
