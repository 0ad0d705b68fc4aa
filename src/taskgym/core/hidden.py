"""Whether a task's hidden material can be found from inside a sandbox.

A task folder hides ``tests/`` and ``solution/`` (references, answers, oracle solutions)
from the agent. :func:`find_hidden` searches a running sandbox for them the way an agent
could: it reads every file the sandbox user can read, anywhere but ``/proc``, ``/sys`` and
``/dev``, and reports each that holds a hidden file's content (whole, or for a large file
three 1 KiB windows of it) or, for a Python file, its compiled code. ``grep -F`` finds the
candidates, a small Python script inside checks them; a canary file planted in ``/tmp``
must be found, so that a search that did not run cannot pass.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from taskgym.core.task import Task
from taskgym.errors import ConfigError
from taskgym.sandbox.base import Session

__all__ = ["HiddenFile", "find_hidden", "hidden_files"]

HIDDEN_FOLDERS = ("tests", "solution")
MIN_BYTES = 16
"""Shorter hidden files are not searched for: their content is not distinctive."""
WINDOW = 1024
SEARCH_TIMEOUT_SEC = 1200.0

_FINDER = r'''
import json, os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "needles.json")) as f:
    needles = json.load(f)
with open(os.path.join(here, "anchors"), "wb") as f:
    f.write(b"".join(bytes.fromhex(a) + b"\n" for n in needles for a in n["anchors"]))
tops = ["/" + n for n in sorted(os.listdir("/"))
        if n not in ("proc", "sys", "dev") and not os.path.islink("/" + n)]
grep = subprocess.run(["grep", "-rlaFsZ", "-D", "skip", "--exclude-dir=" + os.path.basename(here),
                       "-f", os.path.join(here, "anchors"), *tops],
                      capture_output=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
found = []
for path in sorted(set(grep.stdout.split(b"\0")) - {b""}):
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 28)
    except OSError:
        continue
    for n in needles:
        if any(all(bytes.fromhex(part) in data for part in proof) for proof in n["proofs"]):
            found.append([n["name"], path.decode("utf-8", "replace")])
with open(os.path.join(here, "report.json"), "w") as f:
    json.dump({"grep": grep.returncode, "found": found}, f)
'''


@dataclass(frozen=True)
class HiddenFile:
    """A hidden file and how to recognise a copy of it."""

    name: str
    """Where it lies (task id and path in the task folder)."""
    anchors: tuple[bytes, ...]
    """Lines (no newline) one of which every copy holds: what ``grep`` looks for."""
    proofs: tuple[tuple[bytes, ...], ...]
    """A file holding every part of one proof is a copy (content, or compiled code)."""


def hidden_files(tasks: Iterable[Task]) -> tuple[list[HiddenFile], list[str]]:
    """The hidden files of ``tasks`` worth searching for, and the names of those skipped
    (shorter than :data:`MIN_BYTES`, or the same as a file the agent is shown anyway)."""
    tasks = list(tasks)
    shown = [p.read_bytes() for t in tasks for p in _files(t.path, ("environment",))]
    shown += [t.instruction.encode() for t in tasks]
    result: list[HiddenFile] = []
    skipped: list[str] = []
    for task in tasks:
        for path in _files(task.path, HIDDEN_FOLDERS):
            name = f"{task.id}:{path.relative_to(task.path)}"
            data = path.read_bytes()
            if len(data) < MIN_BYTES or any(data in other for other in shown):
                skipped.append(name)
                continue
            result.append(_recognise(name, data, path.suffix == ".py"))
    return result, skipped


def find_hidden(session: Session, files: list[HiddenFile]) -> list[tuple[str, str]]:
    """(hidden file, sandbox path) for every copy of ``files`` the sandbox user can read."""
    folder = f".taskgym-hidden-search-{secrets.token_hex(6)}"
    canary = secrets.token_bytes(48).hex().encode()
    needles = [*files, HiddenFile("canary", (canary,), ((canary,),))]
    session.write_file(f"{folder}/needles.json", json.dumps(
        [{"name": n.name, "anchors": [a.hex() for a in n.anchors],
          "proofs": [[part.hex() for part in proof] for proof in n.proofs]} for n in needles]
    ).encode())
    session.write_file(f"{folder}/find.py", _FINDER.encode())
    plant = session.exec(f"mkdir -p /tmp/.canary/deep && printf %s {canary.decode()} "
                         "> /tmp/.canary/deep/file")
    if plant.exit_code != 0:
        raise AssertionError(f"could not plant the canary in /tmp: {plant}")
    result = session.exec(f"python3 -I {folder}/find.py", timeout=SEARCH_TIMEOUT_SEC)
    try:  # a file, not stdout: a long list of copies would pass the output cap
        report = json.loads(session.read_file(f"{folder}/report.json"))
    except (OSError, ValueError, ConfigError) as exc:
        raise AssertionError(f"the search gave no report: {result}") from exc
    session.exec(f"rm -rf {folder} /tmp/.canary")
    found = [(str(name), str(path)) for name, path in report["found"]]
    if ("canary", "/tmp/.canary/deep/file") not in found:
        raise AssertionError(f"the search did not find its canary (grep exit {report['grep']})")
    return [item for item in found if item[0] != "canary"]


def _files(root: Path, folders: tuple[str, ...]) -> list[Path]:
    return sorted(p for folder in folders for p in (root / folder).rglob("*")
                  if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts)


def _recognise(name: str, data: bytes, python: bool) -> HiddenFile:
    parts: tuple[bytes, ...] = (data,) if len(data) <= 4 * WINDOW else (
        data[:WINDOW], data[len(data) // 2 : len(data) // 2 + WINDOW], data[-WINDOW:])
    anchors = [_longest_line(parts[0])]
    proofs = [parts]
    if python:
        try:
            code = compile(data, name, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            code = None
        anchor = _longest_line(code.co_code) if code is not None else b""
        if code is not None and len(anchor) >= 8:  # else too common to grep for
            proofs.append((code.co_code, *(n.encode() for n in code.co_names if len(n) >= 3)))
            anchors.append(anchor)
    return HiddenFile(name, tuple(a for a in anchors if a), tuple(proofs))


def _longest_line(data: bytes) -> bytes:
    """The longest run without a newline (at most 200 bytes of it)."""
    return max(data.split(b"\n"), key=len)[:200]
