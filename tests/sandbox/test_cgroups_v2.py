"""The cgroup v2 code path, on a stand-in tree (this machine has cgroup v1).

The stand-in imitates what the kernel's cgroup2 filesystem does for the calls taskgym
makes: interface files in every folder, and ``rmdir`` of a folder whose ``cgroup.procs``
is empty. Real enforcement of the limits on v2 is not proven here (see docs/security.md).
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from taskgym.sandbox.host import cgroups
from taskgym.sandbox.host.cgroups import CgroupLimits, cgroup_parents

_INTERFACE = {"cgroup.procs": "", "cgroup.subtree_control": "", "memory.max": "max",
              "memory.peak": "0", "pids.max": "max", "cpu.stat": "usage_usec 0\n",
              "cpu.max": "max 100000"}


def _add_interface(path: Path) -> None:
    for name, text in _INTERFACE.items():
        if not (path / name).exists():
            (path / name).write_text(text)


@pytest.fixture()
def v2_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cgroup"
    root.mkdir()
    _add_interface(root)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    real_mkdir, real_rmdir, real_write = Path.mkdir, Path.rmdir, Path.write_text

    def write_text(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self.name == "cgroup.subtree_control" and self.is_relative_to(root) and self.exists():
            enabled = set(self.read_text().split())  # the kernel toggles "+name" / "-name"
            for token in data.split():
                (enabled.add if token[0] == "+" else enabled.discard)(token[1:])
            data = " ".join(sorted(enabled))
        return real_write(self, data)

    def mkdir(self: Path, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        real_mkdir(self, mode, parents, exist_ok)
        if self.is_relative_to(root):
            _add_interface(self)

    def rmdir(self: Path) -> None:
        if not self.is_relative_to(root):
            return real_rmdir(self)
        if (self / "cgroup.procs").read_text().split():
            raise OSError(errno.EBUSY, "cgroup busy", str(self))
        if any(p.is_dir() for p in self.iterdir()):
            raise OSError(errno.ENOTEMPTY, "has children", str(self))
        shutil.rmtree(self)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    monkeypatch.setattr(Path, "rmdir", rmdir)
    monkeypatch.setattr(Path, "write_text", write_text)
    monkeypatch.setattr(cgroups, "_ROOT", root)
    return root


def test_root_gets_limits_under_a_taskgym_parent(v2_tree: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    limits = CgroupLimits("123-abc", 256 << 20, 64)
    cg = v2_tree / "taskgym" / "123-abc"
    assert limits.version == 2 and limits.dirs == [cg]
    assert (cg / "memory.max").read_text() == str(256 << 20)
    assert (cg / "pids.max").read_text() == "64"
    assert (cg / "memory.swap.max").read_text() == "0"
    assert set((v2_tree / "cgroup.subtree_control").read_text().split()) >= {"memory", "pids"}
    assert set((v2_tree / "taskgym" / "cgroup.subtree_control").read_text().split()) == {
        "cpu", "memory", "pids"}
    assert (cg / "cpu.max").read_text() == "max 100000" and not limits.cpu_limited
    limits.add(4242)
    assert (cg / "cgroup.procs").read_text() == "4242"
    (cg / "memory.peak").write_text("1048576")
    (cg / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 1\n")
    assert limits.peak_memory() == 1 << 20
    assert limits.cpu_seconds() == 2.5
    assert cgroup_parents() == [v2_tree / "taskgym"]
    (cg / "cgroup.procs").write_text("")  # the sandbox's processes are gone
    limits.close()
    assert not cg.exists() and limits.dirs == []


def test_a_user_gets_limits_in_the_tree_systemd_delegated(v2_tree: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    service = v2_tree / "user.slice" / "user-1000.slice" / "user@1000.service"
    for folder in (v2_tree / "user.slice", service.parent, service, service / "app.slice"):
        folder.mkdir()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(cgroups, "_own_cgroup",
                        lambda: "/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope")
    limits = CgroupLimits("77-xyz", 128 << 20, 32)
    assert limits.dirs == [service / "taskgym.slice" / "77-xyz"]
    assert set((service / "cgroup.subtree_control").read_text().split()) >= {"memory", "pids"}
    assert cgroup_parents() == [service / "taskgym.slice"]
    limits.close()
    assert not (service / "taskgym.slice" / "77-xyz").exists()


def test_a_user_outside_a_systemd_session_falls_back(v2_tree: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(cgroups, "_own_cgroup", lambda: "/docker/abcdef")
    with pytest.raises(OSError, match="delegated"):
        CgroupLimits("1-a", 1 << 20, 8)
    assert cgroup_parents() == []


def test_a_cpu_quota_is_written_as_cpu_max(v2_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    limits = CgroupLimits("9-cpu", 64 << 20, 16, cpus=1.5)
    assert (v2_tree / "taskgym" / "9-cpu" / "cpu.max").read_text() == "150000 100000"
    assert limits.cpu_limited
    limits.close()
