"""taskgym.sandbox.host.fs on a plain directory: path splitting, reads, writes, FIFOs and copies."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgym.errors import ConfigError
from taskgym.sandbox.host.fs import copy_in, copy_out, open_fifo, read_file, relative_parts, write_file

# -- relative_parts --------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "parts"), [
    ("/app/a/b.txt", ["a", "b.txt"]),
    ("/app/x", ["x"]),
    ("/app/./a//b/", ["a", "b"]),
    ("a/b.txt", ["a", "b.txt"]),
    ("./a/./b", ["a", "b"]),
    ("file name with spaces é", ["file name with spaces é"]),
    ("...", ["..."]),
    ("..hidden", ["..hidden"]),
])
def test_relative_parts_accepts(path, parts):
    assert relative_parts(path, "/app") == parts


@pytest.mark.parametrize("path", ["../etc/passwd", "a/../../b", "a/..", "/app/../etc/passwd",
                                  "/app/a/../../x", ".."])
def test_relative_parts_refuses_dotdot(path):
    with pytest.raises(ConfigError) as info:
        relative_parts(path, "/app")
    assert str(info.value) == f"{path!r} contains '..'; give a path inside the workspace"


@pytest.mark.parametrize("path", ["/etc/passwd", "/appx/file", "/ap", "/", "/tmp/app/x"])
def test_relative_parts_refuses_outside(path):
    with pytest.raises(ConfigError) as info:
        relative_parts(path, "/app")
    assert str(info.value) == (f"{path!r} is outside the workspace /app; file tools work "
                               "inside it (use bash for other paths)")


@pytest.mark.parametrize("path", ["a\x00b", "/app/x\x00", "\x00"])
def test_relative_parts_refuses_nul(path):
    with pytest.raises(ConfigError, match="path .* contains a NUL character"):
        relative_parts(path, "/app")


@pytest.mark.parametrize("path", ["", ".", "/app", "/app/", "./."])
def test_relative_parts_refuses_the_workspace_itself(path):
    with pytest.raises(ConfigError, match="names the workspace itself, not a file"):
        relative_parts(path, "/app")


def test_relative_parts_other_workdir():
    assert relative_parts("/work/space/f", "/work/space") == ["f"]
    with pytest.raises(ConfigError, match="outside the workspace /work/space"):
        relative_parts("/app/f", "/work/space")


# -- read_file / write_file -----------------------------------------------------------------


@pytest.fixture()
def root(tmp_path) -> Iterator[tuple[Path, int]]:
    folder = tmp_path / "root"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield folder, fd
    finally:
        os.close(fd)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_write_then_read(root):
    folder, fd = root
    write_file(fd, ["deep", "er", "f.txt"], "héllo\n".encode(), 0o644)
    assert (folder / "deep" / "er" / "f.txt").read_text() == "héllo\n"
    assert _mode(folder / "deep" / "er" / "f.txt") == 0o644
    assert read_file(fd, ["deep", "er", "f.txt"], 1000) == ("héllo\n".encode(), 7)


def test_read_limit_returns_full_size(root):
    folder, fd = root
    (folder / "big").write_bytes(b"0123456789" * 300_000)
    data, size = read_file(fd, ["big"], 15)
    assert data == b"012345678901234"
    assert size == 3_000_000
    data, size = read_file(fd, ["big"], 2_500_000)  # more than one 1 MiB chunk
    assert len(data) == 2_500_000 and data[-3:] == b"789"


def test_write_truncates_and_sets_mode(root):
    folder, fd = root
    (folder / "f").write_text("a much longer old content")
    os.chmod(folder / "f", 0o600)
    write_file(fd, ["f"], b"new", 0o755)
    assert (folder / "f").read_bytes() == b"new"
    assert _mode(folder / "f") == 0o755
    write_file(fd, ["f"], b"", 0o640)
    assert (folder / "f").read_bytes() == b""
    assert _mode(folder / "f") == 0o640


def test_read_refuses_final_symlink(root, tmp_path):
    folder, fd = root
    secret = tmp_path / "secret"
    secret.write_text("top secret")
    (folder / "link").symlink_to(secret)
    with pytest.raises(ConfigError, match="'link' is a symbolic link; refusing to follow"):
        read_file(fd, ["link"], 100)


def test_read_refuses_symlinked_folder(root, tmp_path):
    folder, fd = root
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("top secret")
    (folder / "dir").symlink_to(outside)
    with pytest.raises(ConfigError, match="'dir' is a link or not a folder; refusing"):
        read_file(fd, ["dir", "secret"], 100)


def test_write_refuses_final_symlink(root, tmp_path):
    folder, fd = root
    target = tmp_path / "target"
    target.write_text("keep me")
    (folder / "link").symlink_to(target)
    with pytest.raises(ConfigError, match="'link' is a symbolic link; refusing to write"):
        write_file(fd, ["link"], b"pwned", 0o644)
    assert target.read_text() == "keep me"
    assert (folder / "link").is_symlink()


def test_write_refuses_dangling_symlink(root, tmp_path):
    folder, fd = root
    (folder / "dangling").symlink_to(tmp_path / "would-be-created")
    with pytest.raises(ConfigError, match="symbolic link"):
        write_file(fd, ["dangling"], b"x", 0o644)
    assert not (tmp_path / "would-be-created").exists()


def test_write_refuses_symlinked_folder(root, tmp_path):
    folder, fd = root
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "sub").symlink_to(outside)
    with pytest.raises(ConfigError, match="'sub' is a link or not a folder"):
        write_file(fd, ["sub", "planted"], b"x", 0o644)
    assert list(outside.iterdir()) == []


def test_write_through_a_file_as_folder(root):
    folder, fd = root
    (folder / "plain").write_text("x")
    with pytest.raises(ConfigError, match="'plain' is a link or not a folder"):
        write_file(fd, ["plain", "child"], b"x", 0o644)


def test_read_refuses_non_regular_files(root):
    folder, fd = root
    (folder / "dir").mkdir()
    os.mkfifo(folder / "fifo")
    with pytest.raises(ConfigError, match="'dir' is not a regular file"):
        read_file(fd, ["dir"], 10)
    # a fifo with no writer must not block the read
    with pytest.raises(ConfigError, match="'fifo' is not a regular file"):
        read_file(fd, ["fifo"], 10)


def test_write_to_fifo_does_not_block(root):
    folder, fd = root
    os.mkfifo(folder / "fifo")
    with pytest.raises((ConfigError, OSError)):
        write_file(fd, ["fifo"], b"x", 0o644)
    assert stat.S_ISFIFO(os.lstat(folder / "fifo").st_mode)


def test_open_fifo_gives_non_blocking_ends_of_that_fifo(root):
    folder, fd = root
    (folder / "sub").mkdir()
    os.mkfifo(folder / "sub" / "fifo")
    with pytest.raises(OSError) as info:  # nothing reads it: opening for writing fails at once
        open_fifo(fd, ["sub", "fifo"], write=True)
    assert info.value.errno == errno.ENXIO
    reader = open_fifo(fd, ["sub", "fifo"], write=False)
    writer = open_fifo(fd, ["sub", "fifo"], write=True)
    try:
        with pytest.raises(BlockingIOError):
            os.read(reader, 10)
        os.write(writer, b"through")
        assert os.read(reader, 10) == b"through"
        for end in (reader, writer):
            assert not os.get_blocking(end) and not os.get_inheritable(end)
    finally:
        os.close(reader)
        os.close(writer)


@pytest.mark.parametrize("kind", ["regular", "folder", "link-to-fifo", "link-to-dev-zero",
                                  "dangling-link", "socket"])
def test_open_fifo_opens_nothing_but_a_fifo(root, tmp_path, kind):
    import socket

    folder, fd = root
    outside = tmp_path / "outside-fifo"
    os.mkfifo(outside)
    target = folder / "channel"
    if kind == "regular":
        target.write_text("x")
    elif kind == "folder":
        target.mkdir()
    elif kind == "link-to-fifo":
        target.symlink_to(outside)
    elif kind == "link-to-dev-zero":
        target.symlink_to("/dev/zero")
    elif kind == "dangling-link":
        target.symlink_to(tmp_path / "nothing")
    else:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(target))
        listener.close()
    for write in (False, True):
        with pytest.raises(ConfigError, match="'channel' is not a FIFO; refusing to open it"):
            open_fifo(fd, ["channel"], write=write)


def test_open_fifo_refuses_a_linked_folder(root, tmp_path):
    folder, fd = root
    outside = tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(outside / "fifo")
    (folder / "sub").symlink_to(outside)
    with pytest.raises(ConfigError, match="'sub' is a link or not a folder"):
        open_fifo(fd, ["sub", "fifo"], write=False)


def test_read_missing_file(root):
    _, fd = root
    with pytest.raises(FileNotFoundError):
        read_file(fd, ["nope"], 10)


def test_root_fd_is_left_open(root):
    folder, fd = root
    write_file(fd, ["a"], b"1", 0o644)
    read_file(fd, ["a"], 1)
    assert os.fstat(fd).st_ino == os.stat(folder).st_ino


# -- copy_in / copy_out ---------------------------------------------------------------------


@pytest.fixture()
def tree(tmp_path) -> Path:
    """A folder with files of several modes, links to outside and a fifo."""
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(src / "run.sh", 0o755)
    (src / "private").write_text("p")
    os.chmod(src / "private", 0o600)
    (src / "sub" / "deeper" / "data.bin").write_bytes(bytes(range(256)) * 10)
    os.chmod(src / "sub", 0o750)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("must not be copied")
    (src / "file-link").symlink_to(outside / "secret")
    (src / "dir-link").symlink_to(outside)
    (src / "rel-link").symlink_to("run.sh")
    (src / "dangling").symlink_to("/nonexistent/x")
    os.mkfifo(src / "fifo")
    return src


def _check_copy(dest: Path, outside: Path) -> None:
    assert (dest / "run.sh").read_text() == "#!/bin/sh\necho hi\n"
    assert _mode(dest / "run.sh") == 0o755
    assert _mode(dest / "private") == 0o600
    assert (dest / "sub" / "deeper" / "data.bin").read_bytes() == bytes(range(256)) * 10
    assert stat.S_ISDIR(os.lstat(dest / "sub").st_mode)
    for name, target in (("file-link", str(outside / "secret")), ("dir-link", str(outside)),
                         ("rel-link", "run.sh"), ("dangling", "/nonexistent/x")):
        assert (dest / name).is_symlink(), name
        assert os.readlink(dest / name) == target
    assert not (dest / "fifo").exists() and not (dest / "fifo").is_symlink()


def test_copy_in(tree, root, tmp_path):
    folder, fd = root
    copy_in(tree, fd)
    _check_copy(folder, tmp_path / "outside")
    assert sorted(os.listdir(folder)) == sorted(
        ["run.sh", "private", "sub", "file-link", "dir-link", "rel-link", "dangling"])
    assert _mode(folder / "sub") == 0o750
    # nothing was written through the links
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret"]


def test_copy_in_refuses_links_planted_in_the_destination(tmp_path, root):
    folder, fd = root
    outside = tmp_path / "victim"
    outside.mkdir()
    (folder / "sub").symlink_to(outside)
    src = tmp_path / "s"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f").write_text("x")
    with pytest.raises(ConfigError, match="link or not a folder"):
        copy_in(src, fd)
    assert list(outside.iterdir()) == []


def test_copy_out(tree, root, tmp_path):
    folder, fd = root
    copy_in(tree, fd)
    os.mkfifo(folder / "fifo2")
    os.chmod(folder / "sub" / "deeper" / "data.bin", 0o604)
    dest = tmp_path / "out" / "ws"
    copy_out(fd, dest)
    _check_copy(dest, tmp_path / "outside")
    assert _mode(dest / "sub" / "deeper" / "data.bin") == 0o604
    assert _mode(dest / "sub") == 0o750
    assert not (dest / "fifo2").exists()
    assert sorted(os.listdir(dest)) == sorted(
        ["run.sh", "private", "sub", "file-link", "dir-link", "rel-link", "dangling"])


@pytest.mark.skipif(os.geteuid() != 0, reason="reading a mode-000 file needs root")
def test_copy_out_keeps_unreadable_modes(root, tmp_path):
    folder, fd = root
    write_file(fd, ["locked"], b"z", 0o000)
    write_file(fd, ["d", "x"], b"y", 0o444)
    os.chmod(folder / "d", 0o500)
    dest = tmp_path / "o"
    try:
        copy_out(fd, dest)
    finally:
        os.chmod(folder / "d", 0o755)
    assert _mode(dest / "locked") == 0o000
    assert _mode(dest / "d" / "x") == 0o444
    assert _mode(dest / "d") == 0o700  # owner rwx is added so the copy stays usable
