"""Publishing finished folders into the cache (:mod:`taskgym.paths`)."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from taskgym.paths import linked_folder, publish_folder, staging_for


def _build(root: Path, name: str, marker: str) -> Path:
    folder = root / name
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "data.txt").write_text("same content\n")
    (folder / "who").write_text(marker)
    return folder


def test_concurrent_publishers_all_end_with_one_complete_folder(tmp_path: Path) -> None:
    dest = tmp_path / "cache" / "key"
    dest.parent.mkdir()
    count = 8
    folders = [_build(dest.parent, f".stage-{i}", str(i)) for i in range(count)]
    barrier = threading.Barrier(count)
    results: list[Path] = []
    errors: list[BaseException] = []

    def publish(folder: Path) -> None:
        barrier.wait()
        try:
            results.append(publish_folder(folder, dest))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=publish, args=(f,)) for f in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert results == [dest] * count
    assert (dest / "sub" / "data.txt").read_text() == "same content\n"
    assert (dest / "who").read_text() in {str(i) for i in range(count)}
    assert sorted(os.listdir(dest.parent)) == ["key"]  # the losers' copies are gone


def test_staging_publishes_and_cleans_up_under_contention(tmp_path: Path) -> None:
    dest = tmp_path / "prepared" / "abc"
    count = 6
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def build(marker: int) -> None:
        try:
            with staging_for(dest) as staging:
                assert not staging.exists() and staging.parent.parent == dest.parent
                _build(staging.parent, staging.name, str(marker))
                barrier.wait()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (dest / "sub" / "data.txt").is_file()
    assert sorted(os.listdir(dest.parent)) == ["abc"]


@pytest.mark.parametrize("case", ["dest is a file", "no parent folder", "folder missing"])
def test_a_rename_error_other_than_already_there_surfaces(tmp_path: Path, case: str) -> None:
    folder = _build(tmp_path, "stage", "1")
    dest = tmp_path / "dest"
    if case == "dest is a file":
        dest.write_text("not a folder")
    elif case == "no parent folder":
        dest = tmp_path / "missing" / "dest"
    else:
        folder = tmp_path / "never-built"
    with pytest.raises(OSError) as caught:
        publish_folder(folder, dest)
    assert caught.value.errno not in (errno.EEXIST, errno.ENOTEMPTY)
    if case != "folder missing":
        assert (folder / "who").is_file()  # nothing was thrown away


def test_a_failed_build_publishes_nothing_and_leaves_no_staging(tmp_path: Path) -> None:
    dest = tmp_path / "cache" / "key"
    with pytest.raises(RuntimeError), staging_for(dest) as staging:
        _build(staging.parent, staging.name, "1")
        raise RuntimeError("the generator failed")
    assert not dest.exists()
    assert os.listdir(dest.parent) == []


def test_linked_folder_links_files_and_follows_their_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASKGYM_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF one")
    first = linked_folder("seeds", [("docs/a.pdf", source)])
    assert (first / "docs" / "a.pdf").read_bytes() == b"%PDF one"
    assert os.path.samefile(first / "docs" / "a.pdf", source)
    assert linked_folder("seeds", [("docs/a.pdf", source)]) == first
    source.write_bytes(b"%PDF two, longer")
    second = linked_folder("seeds", [("docs/a.pdf", source)])
    assert second != first and (second / "docs" / "a.pdf").read_bytes() == b"%PDF two, longer"
