"""Container images for the docker backend, built without an image registry.

* ``taskgym/base``: a Debian root made with ``debootstrap`` from this machine's package
  mirror (read from its apt sources at run time), pruned to what a sandbox needs (no
  ``/home``, ``/root``, ``/var``, ``/etc/shadow``; users ``root`` and ``agent`` (uid 1000)
  only), brought in with ``docker import``.
* ``taskgym/<env id>``: ``envs/<env id>/Dockerfile``, built on the base with no network.
* ``taskgym/host-python``: the base plus a copy of what a local sandbox shows of the Python
  that runs taskgym (its executable, shared libraries and import path, every taskgym
  installation and task folder left out: :mod:`taskgym.sandbox.host_python`), at the same
  paths, for envs whose spec asks for ``host_python`` (CadQuery, pdfplumber...).
* A task folder's own ``environment/Dockerfile`` (Harbor / Terminal-Bench): built on first
  use and tagged ``taskgym/task:<hash of the folder>``, so a changed folder gets a new image.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from taskgym.errors import ConfigError, SandboxUnavailableError
from taskgym.paths import envs_dir
from taskgym.sandbox.host_python import host_python_view

__all__ = [
    "BASE_IMAGE",
    "BASE_PACKAGES",
    "HOST_PYTHON_IMAGE",
    "apt_mirror",
    "build_base",
    "build_env_image",
    "build_host_python",
    "env_image",
    "env_ids_with_images",
    "folder_image",
    "image_exists",
]

BASE_IMAGE = "taskgym/base"
HOST_PYTHON_IMAGE = "taskgym/host-python"
STAGE_SCRIPT = "stage.sh"
"""An env folder's optional script that adds host files to a copy of the folder (its one argument)
before the offline build: what no registry can supply, such as a system package's binary."""
BASE_PACKAGES = ("bash", "coreutils", "procps", "python3", "python3-pytest", "git", "make",
                 "gcc", "libc6-dev")
"""Installed into the base root by debootstrap (build steps have no network, so every
package the built-in envs need is here; an env's Dockerfile adds files and settings)."""
_PRUNE = ("home", "root", "srv", "var", "opt", "mnt", "media", "boot", "etc/shadow",
          "etc/gshadow", "etc/shadow-", "etc/gshadow-", "etc/passwd-", "etc/group-",
          "usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale")
_PASSWD = "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nagent:x:1000:1000:agent:/tmp:/bin/bash\n"
_GROUP = "root:x:0:\nagent:x:1000:\n"


def image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def env_image(env_id: str) -> str:
    """The image tag of a registered env."""
    return f"taskgym/{env_id}"


def env_ids_with_images() -> list[str]:
    """Env ids whose ``envs/<id>/`` folder declares a Dockerfile."""
    return sorted(p.parent.name for p in envs_dir().glob("*/Dockerfile"))


def apt_mirror(sources: Path = Path("/etc/apt")) -> tuple[str, str]:
    """(mirror URL, suite) of the first Debian archive in this machine's apt sources."""
    files = [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*.list")),
             *sorted((sources / "sources.list.d").glob("*.sources"))]
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():  # one-line format: deb [opts] URL suite components
            match = re.match(r"\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
            if match and "security" not in match.group(2):
                return match.group(1), match.group(2)
        for stanza in text.split("\n\n"):  # deb822 format
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.MULTILINE))
            uris, suites = fields.get("URIs", "").split(), fields.get("Suites", "").split()
            if uris and suites and "security" not in suites[0]:
                return uris[0], suites[0]
    raise SandboxUnavailableError(
        "no Debian mirror found in /etc/apt/sources.list(.d); the offline base image needs "
        "one (debootstrap fetches packages from it)")


def build_base(client: Any, force: bool = False, log: Any = print) -> str:
    """Build ``taskgym/base`` with debootstrap and ``docker import`` (needs root)."""
    if not force and image_exists(client, BASE_IMAGE):
        log(f"{BASE_IMAGE}: present")
        return BASE_IMAGE
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise SandboxUnavailableError(
            "debootstrap is not installed: `sudo apt-get install -y debootstrap`")
    mirror, suite = apt_mirror()
    with tempfile.TemporaryDirectory(prefix="taskgym-base-") as tmp:
        root = Path(tmp) / "root"
        log(f"{BASE_IMAGE}: debootstrap {suite} (this takes a few minutes)")
        subprocess.run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                        suite, str(root), mirror], check=True, stdout=subprocess.DEVNULL)
        _prune(root)
        archive = Path(tmp) / "root.tar"
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(archive), "."],
                       check=True)
        log(f"{BASE_IMAGE}: docker import")
        client.api.import_image_from_file(str(archive), repository=BASE_IMAGE, tag="latest")
    return BASE_IMAGE


def _prune(root: Path) -> None:
    """Remove what a sandbox must not show, and leave the two users taskgym runs as."""
    for rel in _PRUNE:
        path = root / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    (root / "etc" / "passwd").write_text(_PASSWD)
    (root / "etc" / "group").write_text(_GROUP)
    for folder in ("app", "tmp", ".taskgym"):
        (root / folder).mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)


def build_env_image(client: Any, env_id: str, log: Any = print) -> str:
    """Build ``envs/<env_id>/Dockerfile`` (no network during the build), building first the
    base image, and the host-python image when the Dockerfile starts from it."""
    folder = envs_dir() / env_id
    if not (folder / "Dockerfile").is_file():
        raise ConfigError(f"{folder} has no Dockerfile; envs with images: "
                          f"{', '.join(env_ids_with_images()) or 'none'}")
    if not image_exists(client, BASE_IMAGE):
        build_base(client, log=log)
    parents = re.findall(r"(?im)^\s*FROM\s+(\S+)", (folder / "Dockerfile").read_text())
    if HOST_PYTHON_IMAGE in parents and not image_exists(client, HOST_PYTHON_IMAGE):
        build_host_python(client, log=log)  # envs whose tools need taskgym's Python packages
    tag = env_image(env_id)
    if not (folder / STAGE_SCRIPT).is_file():
        log(f"{tag}: docker build {folder}")
        _build(client, folder, tag)
        return tag
    with tempfile.TemporaryDirectory(prefix="taskgym-stage-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(folder, context, symlinks=True)
        log(f"{tag}: {STAGE_SCRIPT} stages what the offline build copies in")
        staged = subprocess.run(["bash", str(context / STAGE_SCRIPT), str(context)],
                                capture_output=True, text=True)
        if staged.returncode != 0:
            raise SandboxUnavailableError(f"{folder / STAGE_SCRIPT} failed: "
                                          f"{(staged.stderr or staged.stdout)[-2000:]}")
        log(f"{tag}: docker build {folder} (with what {STAGE_SCRIPT} staged)")
        _build(client, context, tag)
    return tag


def build_host_python(client: Any, log: Any = print) -> str:
    """Build ``taskgym/host-python``: the base plus this interpreter's view (see
    :mod:`taskgym.sandbox.host_python`: what a local sandbox shows of it, taskgym left out)."""
    view = host_python_view()
    under_tmp = [path for path in view.binds if path == "/tmp" or path.startswith("/tmp/")]
    if under_tmp:
        raise SandboxUnavailableError(
            f"the Python running taskgym lies under /tmp ({under_tmp[0]}), which every container "
            "covers with its own empty /tmp; make the image from an interpreter installed "
            "elsewhere (e.g. `python3 -m venv ~/.venvs/taskgym`)")
    if not image_exists(client, BASE_IMAGE):
        build_base(client, log=log)
    log(f"{HOST_PYTHON_IMAGE}: finding the system libraries its extension modules load")
    libraries = _missing_in_base(client, _host_libraries(view.binds))
    with tempfile.TemporaryDirectory(prefix="taskgym-host-python-") as tmp:
        context = Path(tmp)
        (context / "libraries.txt").write_text("".join(f"{path.lstrip('/')}\n" for path in libraries))
        log(f"{HOST_PYTHON_IMAGE}: packing {len(view.binds)} folders and files of "
            f"{view.executable} (without taskgym) and {len(libraries)} system libraries the "
            "base lacks")
        subprocess.run(["tar", "-C", "/", "-cf", str(context / "python.tar"),
                        *(f"--exclude={path.lstrip('/')}" for path in view.hidden),
                        *(path.lstrip("/") for path in view.binds),
                        "-T", str(context / "libraries.txt")], check=True)
        (context / "libraries.txt").unlink()
        (context / "Dockerfile").write_text(
            f"FROM {BASE_IMAGE}\nADD python.tar /\nLABEL org.taskgym.host-python=\"1\"\n"
            f"ENV PATH={Path(view.executable).parent}:/usr/local/bin:/usr/bin:/bin\n")
        log(f"{HOST_PYTHON_IMAGE}: docker build")
        _build(client, context, HOST_PYTHON_IMAGE)
    return HOST_PYTHON_IMAGE


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
    output = client.containers.run(BASE_IMAGE, ["/bin/sh", "-c", script, "sh", *paths],
                                   remove=True, network_mode="none")
    return [line for line in output.decode().splitlines() if line]


def folder_image(client: Any, folder: Path) -> str:
    """The image of a task's ``environment/`` folder, built on first use, cached by content."""
    if not (folder / "Dockerfile").is_file():
        raise ConfigError(f"{folder} has no Dockerfile")
    tag = f"taskgym/task:{folder_hash(folder)}"
    if not image_exists(client, tag):
        missing = [name for name in base_images(folder / "Dockerfile")
                   if not image_exists(client, name)]
        if missing:
            raise SandboxUnavailableError(
                f"{folder / 'Dockerfile'} starts FROM {', '.join(missing)}, which this Docker "
                "engine does not have, and taskgym builds without network: bring the image "
                "here (`docker pull` where a registry is reachable, then `docker save` / "
                "`docker load`), or change FROM to an image `docker images` lists")
        _build(client, folder, tag)
    return tag


def export_image_dir(client: Any, tag: str, path: str, dest: Path) -> bool:
    """Copy the folder ``path`` of image ``tag`` into the new host folder ``dest`` (regular
    files, folders and links only, nothing written outside ``dest``); ``False`` when the image has
    no such folder or it is empty."""
    import docker.errors

    container = client.containers.create(tag, command=["/bin/true"], network_mode="none")
    try:
        try:
            stream, _stat = container.get_archive(path.rstrip("/") + "/.")
        except docker.errors.NotFound:
            return False
        with tempfile.TemporaryFile() as buffer:
            for chunk in stream:
                buffer.write(chunk)
            buffer.seek(0)
            with tarfile.open(fileobj=buffer) as archive:
                members = [m for m in archive.getmembers()
                           if m.isfile() or m.isdir() or m.issym()]
                if not any(m.name not in (".", "./") for m in members):
                    return False
                dest.mkdir(parents=True)
                archive.extractall(dest, members=members, filter="tar")
        return True
    finally:
        container.remove(force=True)


def base_images(dockerfile: Path) -> list[str]:
    """The images a Dockerfile's FROM lines name (not its own build stages, not ``scratch``);
    ``ARG`` defaults are substituted, as docker does for ARGs declared before FROM."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    found: list[str] = []
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        keyword = words[0].upper()
        if keyword == "ARG" and not found and len(words) > 1:
            name, _, default = words[1].partition("=")
            args[name] = default.strip("\"'")
        elif keyword == "FROM":
            rest = [w for w in words[1:] if not w.startswith("--")]
            if not rest:
                continue
            image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m[1], ""), rest[0])
            if image.lower() not in stages and image != "scratch" and image not in found:
                found.append(image)
            if len(rest) >= 3 and rest[1].upper() == "AS":
                stages.add(rest[2].lower())
    return found


def folder_hash(folder: Path) -> str:
    """A hash of every path, mode and file content under ``folder``."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            digest.update(oct(path.lstat().st_mode).encode() + b"\0")
            digest.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return digest.hexdigest()[:16]


def _build(client: Any, folder: Path, tag: str) -> None:
    import docker.errors

    try:
        client.images.build(path=str(folder), tag=tag, network_mode="none", rm=True,
                            forcerm=True)
    except docker.errors.BuildError as exc:
        lines = "".join(str(chunk.get("stream", chunk.get("error", "")))
                        for chunk in exc.build_log)
        raise SandboxUnavailableError(
            f"building {tag} from {folder} failed (builds run without network, so a "
            f"Dockerfile may only start FROM an image present here):\n{lines[-2000:]}") from exc
