"""Container images for the docker backend, built without an image registry.

* ``taskgym/base``: a Debian root made with ``debootstrap`` from this machine's package
  mirror (read from its apt sources at run time), pruned to what a sandbox needs (no
  ``/home``, ``/root``, ``/var``, ``/etc/shadow``; users ``root`` and ``agent`` (uid 1000)
  only), brought in with ``docker import``.
* ``taskgym/<env id>``: ``envs/<env id>/Dockerfile``, built on the base with no network.
* ``taskgym/host-python``: the base plus a copy of what a local sandbox shows of the Python
  that runs taskgym (its executable, shared libraries and import path, every taskgym
  installation and task folder left out: :mod:`taskgym.sandbox.host.python_view`), at the same
  paths, for envs whose spec asks for ``host_python`` (CadQuery, pdfplumber...):
  :mod:`taskgym.sandbox.docker.host_python_image`.
* A task folder's own ``environment/Dockerfile`` (Harbor / Terminal-Bench): built on first
  use and tagged ``taskgym/task:<hash of the folder>``, so a changed folder gets a new image.

The names above are canonical; the tags on this engine replace their ``taskgym/`` with
``$TASKGYM_IMAGE_NAMESPACE`` when it is set (:func:`local_tag`), so that two interpreters on
one machine can each keep a set of images made from their own Python (an env's Dockerfile
starts ``FROM ${TASKGYM_IMAGES}/...``, a build argument set to that namespace). The
host-python image records the interpreter it was packed from and the install time of its
newest package in labels (:mod:`taskgym.sandbox.docker.host_python_image`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from taskgym.errors import ConfigError, SandboxUnavailableError
from taskgym.paths import envs_dir

__all__ = [
    "BASE_IMAGE",
    "BASE_PACKAGES",
    "HOST_PYTHON_IMAGE",
    "NAMESPACE_VARIABLE",
    "apt_mirror",
    "build_base",
    "build_env_image",
    "docker_build",
    "env_image",
    "env_ids_with_images",
    "folder_image",
    "image_exists",
    "image_namespace",
    "local_tag",
]

BASE_IMAGE = "taskgym/base"
HOST_PYTHON_IMAGE = "taskgym/host-python"
NAMESPACE_VARIABLE = "TASKGYM_IMAGE_NAMESPACE"
"""Names the repository prefix of this engine's taskgym images (default ``taskgym``)."""
NAMESPACE_ARG = "TASKGYM_IMAGES"
"""The build argument that carries the namespace into an env's Dockerfile's ``FROM``."""
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


def image_namespace() -> str:
    """``$TASKGYM_IMAGE_NAMESPACE``, else ``taskgym``: the repository prefix of the images."""
    namespace = os.environ.get(NAMESPACE_VARIABLE) or "taskgym"
    if not re.fullmatch(r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*",
                        namespace):
        raise ConfigError(f"{NAMESPACE_VARIABLE}={namespace!r} is not a docker repository "
                          "prefix: lowercase letters, digits and . _ - / between them")
    return namespace


def local_tag(image: str) -> str:
    """The tag on this engine of the canonical ``image`` (``taskgym/...`` moves to the
    namespace; any other name is left as it is)."""
    if image.startswith("taskgym/"):
        return f"{image_namespace()}/{image.removeprefix('taskgym/')}"
    return image


def env_image(env_id: str) -> str:
    """The image tag of a registered env (its canonical name: see :func:`local_tag`)."""
    return f"taskgym/{env_id}"


_IMAGE_FOLDERS: dict[str, Path] = {}
"""Dockerfile folders of envs outside taskgym's ``envs/`` (a plugin's), by env id."""


def add_image_folders(folders: Mapping[str, Path]) -> None:
    """Build the image of each env id in ``folders`` from that folder (a plugin's own, which
    its env class names: ``taskgym.core.registry.image_folders``)."""
    _IMAGE_FOLDERS.update(folders)


def image_folder(env_id: str) -> Path:
    """The folder of ``env_id``'s Dockerfile: its own (:func:`add_image_folders`), else
    ``envs/<env_id>``."""
    return _IMAGE_FOLDERS.get(env_id) or envs_dir() / env_id


def env_ids_with_images() -> list[str]:
    """Env ids whose image folder (``envs/<id>/`` or a plugin's) declares a Dockerfile."""
    own = {p.parent.name for p in envs_dir().glob("*/Dockerfile")}
    return sorted(own | {i for i, folder in _IMAGE_FOLDERS.items()
                         if (folder / "Dockerfile").is_file()})


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
    tag = local_tag(BASE_IMAGE)
    if not force and image_exists(client, tag):
        log(f"{tag}: present")
        return tag
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise SandboxUnavailableError(
            "debootstrap is not installed: `sudo apt-get install -y debootstrap`")
    mirror, suite = apt_mirror()
    with tempfile.TemporaryDirectory(prefix="taskgym-base-") as tmp:
        root = Path(tmp) / "root"
        log(f"{tag}: debootstrap {suite} (this takes a few minutes)")
        subprocess.run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                        suite, str(root), mirror], check=True, stdout=subprocess.DEVNULL)
        _prune(root)
        archive = Path(tmp) / "root.tar"
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(archive), "."],
                       check=True)
        log(f"{tag}: docker import")
        client.api.import_image_from_file(str(archive), repository=tag, tag="latest")
    return tag


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
    """Build ``env_id``'s Dockerfile (:func:`image_folder`) (no network during the build), building first the
    base image when it is missing (the host-python image, which some Dockerfiles start from,
    is :func:`taskgym.sandbox.docker.host_python_image.build_host_python`'s)."""
    folder = image_folder(env_id)
    if not (folder / "Dockerfile").is_file():
        raise ConfigError(f"{folder} has no Dockerfile; envs with images: "
                          f"{', '.join(env_ids_with_images()) or 'none'}")
    if not image_exists(client, local_tag(BASE_IMAGE)):
        build_base(client, log=log)
    if HOST_PYTHON_IMAGE in base_images(folder / "Dockerfile") and not image_exists(
            client, local_tag(HOST_PYTHON_IMAGE)):  # envs whose tools need taskgym's packages
        raise SandboxUnavailableError(
            f"{env_id} starts from {local_tag(HOST_PYTHON_IMAGE)}, which is not built: "
            "`taskgym images build host-python` (`taskgym images build` builds it first)")
    tag = local_tag(env_image(env_id))
    if not (folder / STAGE_SCRIPT).is_file():
        log(f"{tag}: docker build {folder}")
        docker_build(client, folder, tag, {NAMESPACE_ARG: image_namespace()})
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
        docker_build(client, context, tag, {NAMESPACE_ARG: image_namespace()})
    return tag


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
        docker_build(client, folder, tag)
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


def docker_build(client: Any, folder: Path, tag: str,
                 buildargs: dict[str, str] | None = None) -> None:
    """``docker build`` of ``folder`` as ``tag``, without network; a failure raises
    :class:`SandboxUnavailableError` with the end of the build's log."""
    import docker.errors

    try:
        client.images.build(path=str(folder), tag=tag, network_mode="none", rm=True,
                            forcerm=True, buildargs=buildargs)
    except docker.errors.BuildError as exc:
        lines = "".join(str(chunk.get("stream", chunk.get("error", "")))
                        for chunk in exc.build_log)
        raise SandboxUnavailableError(
            f"building {tag} from {folder} failed (builds run without network, so a "
            f"Dockerfile may only start FROM an image present here):\n{lines[-2000:]}") from exc
