"""Tree copies (snapshots, restores) of folders the agent locked, when taskgym is not root.

Root reads every folder whatever its mode; an ordinary user reads a folder it owns only by
first giving itself the permission back. Each case runs in a forked child that, when the
tests run as root, becomes an ordinary user (65534) first."""

from __future__ import annotations

import json
import os
import stat
import tempfile
import traceback
from pathlib import Path
from typing import Any

from taskgym.sandbox.host import tree

_USER = 65534
_DIR = os.O_RDONLY | os.O_DIRECTORY


def _as_ordinary_user(work: Any) -> Any:
    """``work(root)`` run in a child that is not root, in a fresh folder it owns; its JSON
    result (or its traceback, raised here)."""
    root = tempfile.mkdtemp(prefix="taskgym-tree-")
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        os.chown(root, _USER, _USER)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery from here on
        os.close(read_end)
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setresgid(_USER, _USER, _USER)
                os.setresuid(_USER, _USER, _USER)
            out = json.dumps({"ok": work(Path(root))})
        except BaseException:
            out = json.dumps({"error": traceback.format_exc()})
        os.write(write_end, out.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        got = json.loads(reader.read() or b'{"error": "the child wrote nothing"}')
    os.waitpid(pid, 0)
    _remove(Path(root))
    assert "error" not in got, got["error"]
    return got["ok"]


def _remove(root: Path) -> None:
    fd = os.open(root, _DIR)  # clear_tree opens the locked folders itself
    try:
        tree.clear_tree(fd)
    finally:
        os.close(fd)
    root.rmdir()


def _build(src: Path) -> None:
    """Folders no owner may enter as they stand: mode 000 with contents, readable but not
    searchable (0400), searchable but not readable (0100), nested; a 000 file inside."""
    (src / "locked" / "inner").mkdir(parents=True)
    (src / "locked" / "inner" / "deep.txt").write_text("deep")
    (src / "locked" / "a.txt").write_text("a")
    (src / "locked" / "zero").write_text("z")
    (src / "readonly").mkdir()
    (src / "readonly" / "r.txt").write_text("r")
    (src / "blind").mkdir()
    (src / "blind" / "b.txt").write_text("b")
    os.chmod(src / "locked" / "zero", 0)
    os.chmod(src / "locked" / "inner", 0)
    os.chmod(src / "locked", 0)
    os.chmod(src / "readonly", 0o400)
    os.chmod(src / "blind", 0o100)


def _modes(fd: int) -> dict[str, int]:
    """Every path's mode under ``fd``, read as root would see it (the modes given back
    each time)."""
    found: dict[str, int] = {}

    def walk(dir_fd: int, prefix: str) -> None:
        for name in sorted(os.listdir(dir_fd)):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            found[prefix + name] = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)
                sub = os.open(name, _DIR, dir_fd=dir_fd)
                try:
                    walk(sub, prefix + name + "/")
                finally:
                    os.close(sub)
                    os.chmod(name, stat.S_IMODE(st.st_mode), dir_fd=dir_fd,
                             follow_symlinks=False)

    walk(fd, "")
    return found


def _copy_count_and_clear(root: Path) -> dict[str, Any]:
    src, dst = root / "src", root / "dst"
    src.mkdir()
    dst.mkdir()
    _build(src)
    src_fd, dst_fd = os.open(src, _DIR), os.open(dst, _DIR)
    try:
        copied = tree.copy_tree(src_fd, dst_fd)
        counted = tree.tree_bytes(src_fd)
        modes_src, modes_dst = _modes(src_fd), _modes(dst_fd)
        os.chmod(dst / "locked", 0o700)
        os.chmod(dst / "locked" / "inner", 0o700)
        deep = (dst / "locked" / "inner" / "deep.txt").read_text()
        os.chmod(dst / "locked" / "inner", 0)
        os.chmod(dst / "locked", 0)
        tree.clear_tree(dst_fd)
        left = os.listdir(dst_fd)
    finally:
        os.close(src_fd)
        os.close(dst_fd)
    return {"copied": copied, "counted": counted, "src": modes_src, "dst": modes_dst,
            "deep": deep, "left": left}


def test_an_ordinary_user_copies_counts_and_clears_folders_the_agent_locked() -> None:
    got = _as_ordinary_user(_copy_count_and_clear)
    assert got["copied"] == got["counted"] == len("deepazrb")
    assert got["deep"] == "deep" and got["left"] == []
    assert got["dst"] == got["src"]  # modes given back on both sides
    assert got["src"]["locked"] == got["src"]["locked/inner"] == got["src"]["locked/zero"] == 0
    assert got["src"]["readonly"] == 0o400 and got["src"]["blind"] == 0o100
