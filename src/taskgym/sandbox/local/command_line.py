"""The bubblewrap command line of a local sandbox: namespaces, the read-only system, the
tmpfs folders with their sizes, the host Python's view, binds, environment, and the
descriptors bwrap reads (its info, block and seccomp pipes, ``/etc/passwd`` and ``/etc/group``,
its options)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from taskgym.errors import ConfigError
from taskgym.sandbox.base import SandboxSpec
from taskgym.sandbox.host.procs import SANDBOX_UID
from taskgym.sandbox.host.python_view import host_python_view
from taskgym.sandbox.shell.commands import CONTROL_DIR, CONTROL_MB

__all__ = ["NESTED_PROC", "bwrap_argv", "etc_files", "memfd", "system_binds"]

_PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:1000:1000:agent:/tmp:/bin/bash\n"

_GROUP = "root:x:0:\nagent:x:1000:\n"

_ETC_FILES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")

def _base_env(spec: SandboxSpec) -> dict[str, str]:
    path = "/usr/bin:/bin"
    if spec.host_python:
        path = f"{Path(sys.executable).parent}:{path}"
    env = {
        "PATH": path,
        "HOME": "/tmp",
        "USER": "agent",
        "LOGNAME": "agent",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    env.update(spec.env)
    return env

def _host_python_args(spec: SandboxSpec) -> list[str]:
    """Binds of the host's Python view (after the sandbox's own tmpfs folders, so that an
    interpreter under /tmp stays visible) and the empty folders over taskgym's material."""
    if not spec.host_python:
        return []
    view = host_python_view()
    own = ("/proc", "/dev", CONTROL_DIR, spec.workdir, *spec.writable_dirs)
    clash = [path for path in view.binds for top in own
             if path == top or path.startswith(top.rstrip("/") + "/")]
    if clash:
        raise ConfigError(f"the Python running taskgym lies in {clash[0]}, which the sandbox "
                          "keeps for itself; run taskgym from an interpreter installed elsewhere")
    args: list[str] = []
    for path in view.binds:
        args += ["--ro-bind", path, path]
    for path in view.hidden:
        args += ["--tmpfs", path, "--remount-ro", path]
    return args


NESTED_PROC = "/.taskgym-zproc"
"""In a sandbox that may nest namespaces, the empty folder the host mounts a second proc on."""


def system_binds() -> list[str]:
    """bwrap options that show the host's system read-only: ``/usr`` and the top folders
    (``/bin``, ``/lib``, ...) as the host has them, links or folders. Never ``/`` itself: its
    submounts come and go (a container's overlay), and bwrap fails when one goes while it
    remounts them read-only."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / top
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{top}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{top}"]
    return args


def bwrap_argv(bwrap: str, spec: SandboxSpec, info_fd: int, block_fd: int, seccomp_fd: int,
               etc_fds: tuple[int, int], workspace: str | None = None,
               nested: bool = False) -> list[str]:
    """The command line of ``bwrap`` for ``spec`` (no command yet); ``etc_fds`` hold the
    sandbox's ``/etc/passwd`` and ``/etc/group`` (:func:`etc_files`). The workspace is a
    tmpfs of ``disk_mb``, or the host folder ``workspace`` bound there (a capped subvolume:
    :mod:`taskgym.sandbox.snapshots.disk`). ``nested``: a grader zygote's sandbox
    (:mod:`taskgym.sandbox.local.zygote`), which may create user namespaces and has the empty
    folder :data:`NESTED_PROC`."""
    if not spec.workdir.startswith("/") or spec.workdir in ("/", "/usr", "/tmp", "/proc"):
        raise ConfigError(f"workdir must be a fresh absolute path, not {spec.workdir!r}")
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--hostname", "sandbox",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--new-session", "--die-with-parent", "--cap-drop", "ALL", "--clearenv",
            *system_binds(), "--tmpfs", "/usr/local"]
    for name in _ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # copied into the sandbox's root, not bound: a bind's host path shows in mountinfo
    args += ["--perms", "0644", "--file", str(etc_fds[0]), "/etc/passwd",
             "--perms", "0644", "--file", str(etc_fds[1]), "/etc/group",
             "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
             "--dev", "/dev", "--size", str(64 << 20), "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev",
             "--size", str(spec.tmp_mb << 20), "--tmpfs", "/tmp",
             *(("--bind", workspace, spec.workdir) if workspace is not None
               else ("--size", str(spec.disk_mb << 20), "--tmpfs", spec.workdir)),
             "--size", str(CONTROL_MB << 20), "--tmpfs", CONTROL_DIR,
             "--size", str(spec.stream_limit_bytes), "--tmpfs", f"{CONTROL_DIR}/o",
             "--size", str(spec.stream_limit_bytes), "--tmpfs", f"{CONTROL_DIR}/e"]
    for path in spec.writable_dirs:
        args += ["--size", str(spec.tmp_mb << 20), "--tmpfs", path]
    args += _host_python_args(spec) + ["--remount-ro", "/usr/local"]
    for host_path, inside in spec.ro_binds.items():
        if not Path(host_path).exists():
            raise ConfigError(f"read-only bind source {host_path} does not exist")
        args += ["--ro-bind", host_path, inside]
    if nested:
        args.remove("--disable-userns")
        args += ["--dir", NESTED_PROC]
    args += ["--remount-ro", "/", "--chdir", spec.workdir]
    for key, value in _base_env(spec).items():
        args += ["--setenv", key, value]
    args += ["--info-fd", str(info_fd), "--block-fd", str(block_fd),
             "--seccomp", str(seccomp_fd)]
    return args


def etc_files() -> tuple[int, int]:
    """Descriptors holding the sandbox's ``/etc/passwd`` and ``/etc/group`` (for ``argv``)."""
    passwd = memfd(_PASSWD.encode())
    try:
        return passwd, memfd(_GROUP.encode())
    except BaseException:
        os.close(passwd)
        raise

def memfd(data: bytes) -> int:
    """A close-on-exec descriptor holding ``data``, from its start (what bwrap reads)."""
    fd = os.memfd_create("taskgym-bwrap", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
