"""Copy-on-write snapshots and forks on a loop filesystem with reflinks (root, xfsprogs,
btrfs-progs): on btrfs with quotas a fork's workspace is a capped subvolume whose files share
the parent's extents (no new space), writes on either side stay on that side, and the cap and
the seccomp filter hold against the agent; on XFS (reflinks, but no quota to cap a folder)
workspaces stay tmpfs and the snapshot says so, while the tree copy itself clones."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgym.errors import ConfigError
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.host import tree
from taskgym.sandbox.host.cleanup import reap, runtime_root, set_runtime_root
from taskgym.sandbox.local import LocalBackend
from taskgym.sandbox.snapshots import disk
from taskgym.sandbox.snapshots.loopfs import loop_filesystem, missing
from taskgym.sandbox.snapshots.spares import Spares

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 1
FIEMAP_EXTENT_SHARED = 0x2000
MB = 1 << 20


def extents(path: Path) -> list[tuple[int, int, int]]:
    """(physical address, length, flags) of each extent of the file ``path`` (FIEMAP)."""
    count = 64
    buf = bytearray(struct.pack("=QQIIII", 0, 2**64 - 1, FIEMAP_FLAG_SYNC, 0, count, 0)
                    + bytes(56 * count))
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf)
    finally:
        os.close(fd)
    mapped = struct.unpack_from("=I", buf, 20)[0]
    found = []
    for i in range(mapped):
        _logical, physical, length, _r1, _r2, flags = struct.unpack_from("=QQQQQI", buf,
                                                                          32 + 56 * i)
        found.append((physical, length, flags))
    return found


def used_bytes(folder: Path) -> int:
    subprocess.run(["sync", "-f", str(folder)], check=True)
    if "btrfs" in subprocess.run(["stat", "-f", "-c", "%T", str(folder)], capture_output=True,
                                 text=True).stdout:
        subprocess.run(["btrfs", "filesystem", "sync", str(folder)], check=True,
                       capture_output=True)
    st = os.statvfs(folder)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(params=["btrfs", "xfs"])
def cow_root(request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    problem = missing(request.param)
    if problem:
        pytest.skip(problem)
    with contextlib.ExitStack() as stack:
        try:
            folder = stack.enter_context(loop_filesystem(request.param, 2048))
        except ConfigError as exc:  # root, yet no loop device or mount here (a container)
            pytest.skip(f"cannot mount a loop {request.param}: {exc}")
        set_runtime_root(folder)
        try:
            yield request.param, folder
        finally:
            set_runtime_root(None)


@pytest.fixture()
def btrfs_root(cow_root: tuple[str, Path]) -> Path:
    if cow_root[0] != "btrfs":
        pytest.skip("on-disk workspaces need btrfs")
    return cow_root[1]


def test_tree_copies_share_extents(cow_root: tuple[str, Path]) -> None:
    """Within one reflink filesystem the tree copy clones: the copy's extents are the
    source's, no new space is used, and a write to either side leaves the other alone."""
    _kind, folder = cow_root
    src, dst = folder / "src", folder / "dst"
    (src / "sub").mkdir(parents=True)
    big = os.urandom(32 * MB)
    (src / "sub" / "big").write_bytes(big)
    (src / "small").write_bytes(b"tiny")
    before = used_bytes(folder)
    dst.mkdir()
    stats = tree.CopyStats()
    fds = [os.open(p, os.O_RDONLY | os.O_DIRECTORY) for p in (src, dst)]
    try:
        assert tree.copy_tree(fds[0], fds[1], stats) == len(big) + 4
    finally:
        for fd in fds:
            os.close(fd)
    assert stats.method == "reflink" and stats.cloned == 2 and not stats.clone_error
    assert used_bytes(folder) - before < 4 * MB  # 32 MB more if it had copied
    ours, theirs = extents(src / "sub" / "big"), extents(dst / "sub" / "big")
    assert [e[:2] for e in ours] == [e[:2] for e in theirs]
    assert all(e[2] & FIEMAP_EXTENT_SHARED for e in theirs)
    with (dst / "sub" / "big").open("r+b") as handle:
        handle.write(b"child")
    with (src / "small").open("ab") as handle:
        handle.write(b" parent")
    assert sha((src / "sub" / "big").read_bytes()) == sha(big)
    assert (dst / "sub" / "big").read_bytes()[:5] == b"child"
    assert (dst / "small").read_bytes() == b"tiny"


def test_xfs_workspaces_stay_tmpfs(cow_root: tuple[str, Path],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """No quota to cap a folder on XFS: the workspace stays a tmpfs, and the snapshot says
    it copied (from the tmpfs to XFS: two filesystems)."""
    if cow_root[0] != "xfs":
        pytest.skip("the XFS fallback")
    assert disk.mode() == ("tmpfs", "the runtime root is not on btrfs")
    monkeypatch.setenv("TASKGYM_SNAPSHOT_MEMORY_BYTES", "0")  # else it goes to memory
    with LocalBackend().start(SandboxSpec()) as session:
        assert session.workspace_storage == "tmpfs"
        session.exec("echo hi > /app/x")
        snap = session.snapshot()
        assert snap.folder.is_relative_to(cow_root[1])
        assert (snap.copy_method, snap.copy_note) == ("copy", "EXDEV")
        snap.close()


def test_btrfs_fork_shares_extents_and_diverges(btrfs_root: Path) -> None:
    backend = LocalBackend()
    spec = SandboxSpec(disk_mb=200)
    spares = Spares(backend)
    assert disk.mode() == ("btrfs", "")
    with backend.start(spec) as parent:
        assert parent.workspace_storage == "btrfs"
        made = parent.exec("mkdir -p /app/d && head -c 48M /dev/urandom > /app/d/big && "
                           "echo small > /app/s; export WHO=parent; cd /app/d", timeout=120)
        assert made.exit_code == 0, made
        original = sha(parent.read_file("/app/d/big"))
        before = used_bytes(btrfs_root)
        snap = parent.snapshot()
        assert (snap.copy_method, snap.copy_note) == ("reflink", "")
        spares.want(spec, 1)
        assert spares.ready(60)
        kids = [backend.fork(snap, spares), backend.fork(snap)]  # a spare, and one started now
        try:
            assert spares.taken == 1
            assert used_bytes(btrfs_root) - before < 8 * MB  # three more copies of 48 MB if not
            parent_ws = disk_path(parent)
            for kid in kids:
                assert kid.workspace_storage == "btrfs"
                assert kid.exec("echo $WHO; pwd").stdout == "parent\n/app/d\n"
                kid_ws = disk_path(kid)
                assert kid_ws != parent_ws
                assert ([e[:2] for e in extents(kid_ws / "d" / "big")]
                        == [e[:2] for e in extents(parent_ws / "d" / "big")])
                assert sha(kid.read_file("/app/d/big")) == original
            kids[0].exec("printf child | dd of=/app/d/big conv=notrunc 2>/dev/null; "
                         "echo kid0 > /app/s")
            parent.exec("echo parent-later > /app/s; head -c 1M /dev/zero >> /app/d/big")
            assert sha(parent.read_file("/app/d/big")) != original
            assert kids[0].read_file("/app/d/big")[:5] == b"child"
            assert sha(kids[1].read_file("/app/d/big")) == original
            assert [k.read_file("/app/s") for k in kids] == [b"kid0\n", b"small\n"]
            assert parent.read_file("/app/s") == b"parent-later\n"
        finally:
            for kid in kids:
                kid.close()
            snap.close()
            spares.close()
    assert not [p for p in runtime_root().iterdir() if p.name.endswith(("-ws", "-snapshot"))]


def disk_path(session: object) -> Path:
    found = session._disk  # type: ignore[attr-defined]  (the host's side of the workspace)
    assert found is not None
    path: Path = found.path
    return path


AGENT_TRIES = r"""
import errno, fcntl, os, struct
def vol(name):
    return bytearray(struct.pack("=q", 0) + name.encode().ljust(4088, b"\0"))
src = os.open("/app", os.O_RDONLY)
for label, request, arg in [
        ("subvol_create", 0x5000940E, vol("escape")),
        ("subvol_create_v2", 0x50009418, bytearray(4096)),
        ("snap_create", 0x50009401, bytearray(struct.pack("=q", src) + b"snap".ljust(4088, b"\0"))),
        ("snap_create_v2", 0x50009417, bytearray(4096)),
        ("qgroup_limit", 0x8030942B, bytearray(struct.pack("=6Q", 0, 1, 1 << 40, 0, 0, 0))),
        ("quota_ctl_disable", 0xC0109428, bytearray(struct.pack("=QQ", 2, 0)))]:
    try:
        fcntl.ioctl(src, request, arg)
        print(label, "ok")
    except OSError as exc:
        print(label, errno.errorcode[exc.errno])
"""


def test_btrfs_cap_and_filter_hold(btrfs_root: Path) -> None:
    """The agent cannot make a subvolume (which would escape its qgroup), lift its limit or
    turn quotas off, nor write past ``disk_mb``; its workspace is mounted nosuid, nodev."""
    with LocalBackend().start(SandboxSpec(disk_mb=64)) as session:
        session.write_file("/app/try.py", AGENT_TRIES.encode())
        tried = dict(line.split() for line in
                     session.exec("python3 /app/try.py").stdout.splitlines())
        assert tried == {"subvol_create": "EPERM", "subvol_create_v2": "EPERM",
                         "snap_create": "EPERM", "snap_create_v2": "EPERM",
                         "qgroup_limit": "EPERM", "quota_ctl_disable": "EPERM"}, tried
        assert "escape" not in session.exec("ls -A /app").stdout
        filled = session.exec("head -c 200M /dev/zero > /app/fill; echo $?; sync", timeout=120)
        assert filled.stdout.split()[0] != "0" and "quota" in filled.stderr.lower(), filled
        assert session.exec("stat -c %s /app/fill").stdout.strip() <= str(65 * MB)
        mount = session.exec("grep ' /app ' /proc/self/mountinfo").stdout
        assert "nosuid" in mount and "nodev" in mount
        # a dead shell's restart keeps the workspace where it is
        session.exec("rm /app/fill; echo kept > /app/kept")
        session.exec("kill -9 $$")
        assert session.read_file("/app/kept") == b"kept\n"
        assert session.workspace_storage == "btrfs"


def test_a_dead_owners_subvolume_is_reaped(btrfs_root: Path) -> None:
    made = disk.DiskWorkspace.create(runtime_root(), 16)
    (made.path / "f").write_bytes(b"left behind")
    dead = made.path.with_name("999999999-1-deadbeef-ws")  # no such process
    made.path.rename(dead)
    assert str(dead) in reap()
    assert not dead.exists()
