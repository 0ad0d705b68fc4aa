"""Grade a submitted CadQuery script against the hidden reference, in a fresh sandbox.

Order matters, and is the defence:
1. Import CadQuery, then fork a child that closes every inherited secret descriptor and only
   then runs the submitted script (time, memory and file-size bounds), writing its part as BREP.
2. Once the child ended (or was killed), kill every other process left in the sandbox.
3. Only then read the nonce, the task settings and the reference from their descriptors (the
   reference never exists as a file here), and compare the parts with this process's own,
   unpatched CadQuery.
4. Report one JSON record, prefixed with the nonce, on the report descriptor.
This process is made non-dumpable first, so no other process can read its memory or its
descriptors through /proc.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import ctypes  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare as compare_parts  # noqa: E402
import geometry  # noqa: E402

OUT = "/tmp/.grade"
PART = f"{OUT}/part.brep"
ERROR = f"{OUT}/error.txt"
PR_SET_DUMPABLE = 4


def _fd(name: str) -> int:
    return int(os.environ[name])


def run_submission(timeout: float, memory_mb: int) -> str | None:
    """Run /app/part.py in a child; ``None`` when it wrote a part, else why not."""
    os.makedirs(OUT, exist_ok=True)
    secret_fds = [_fd(n) for n in ("TASKGYM_NONCE_FD", "TASKGYM_REPORT_FD", "TASKGYM_SECRET_FD")]
    pid = os.fork()
    if pid == 0:
        for fd in secret_fds:
            os.close(fd)
        os.setsid()
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
        with open("/proc/self/statm") as statm:
            limit = int(statm.read().split()[0]) * resource.getpagesize() + (memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))
        try:
            with open("/app/part.py", encoding="utf-8", errors="replace") as source:
                shape = geometry.shape_from_code(source.read(), "/app/part.py")
            geometry.save_brep(shape, PART)
            os._exit(0)
        except BaseException:
            with open(ERROR, "w") as error:
                error.write(traceback.format_exc(limit=-2)[-1500:])
            os._exit(1)
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.02)
    else:
        status = None
    _kill_everything_else()
    if status is None:
        return f"the code ran past {timeout:g} s and was stopped"
    code = os.waitstatus_to_exitcode(status)
    if code == 0 and os.path.exists(PART):
        return None
    if code < 0:
        return f"the code was killed by signal {-code} (out of memory?)"
    try:
        with open(ERROR) as error:
            return "the code failed:\n" + error.read()
    except OSError:
        return f"the code exited with status {code} without producing a part"


def _kill_everything_else() -> None:
    """SIGKILL every process of this sandbox user except this one and its parent, until none
    is left (processes of other users, such as a container's init, are not the code's)."""
    me, parent, uid = os.getpid(), os.getppid(), os.getuid()
    for _ in range(50):
        others = [int(p) for p in os.listdir("/proc")
                  if p.isdigit() and int(p) not in (me, parent, 1) and _owner(p) == uid]
        if not others:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.01)


def _owner(pid: str) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def compare(settings: dict[str, Any], reference_data: bytes) -> dict[str, Any]:
    """The submitted part (as the child wrote it) against the reference."""
    reference = geometry.load_reference(settings["reference_kind"], reference_data, settings["units"])
    return compare_parts.evaluate(settings, geometry.load_brep(PART), reference)


def check_reference(settings: dict[str, Any], reference_data: bytes) -> dict[str, Any]:
    """Only the reference: whether it is one valid solid (a task check, no submission)."""
    reference = geometry.load_reference(settings["reference_kind"], reference_data, settings["units"])
    fault = compare_parts.reference_problem(reference)
    return {"gate": fault is None, "reason": fault, "reference_fault": fault is not None,
            "reference_properties": geometry.properties(reference)}


def main() -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    timeout = float(os.environ.get("TASKGYM_RUN_TIMEOUT", "60"))
    memory_mb = int(os.environ.get("TASKGYM_RUN_MEMORY_MB", "1024"))
    imported = time.monotonic()
    only_reference = os.environ.get("TASKGYM_CHECK_REFERENCE") == "1"
    failure = None if only_reference else run_submission(timeout, memory_mb)
    ran = time.monotonic()
    nonce = _read_all(_fd("TASKGYM_NONCE_FD")).decode()
    header, _, reference = _read_all(_fd("TASKGYM_SECRET_FD")).partition(b"\n")
    settings = json.loads(header)
    if failure is not None:
        record: dict[str, Any] = {"gate": False, "reason": failure}
    else:
        try:
            record = (check_reference if only_reference else compare)(settings, reference)
        except Exception:
            record = {"gate": False, "reason": "the part could not be compared with the reference:\n"
                                               + traceback.format_exc(limit=-2)[-1500:]}
    record["timing"] = {"import_sec": imported - STARTED, "user_code_sec": ran - imported,
                        "compare_sec": time.monotonic() - ran}
    with os.fdopen(_fd("TASKGYM_REPORT_FD"), "w") as report:
        report.write(f"{nonce} {json.dumps(record)}\n")
    os._exit(0)  # skip tearing down OpenCascade's and VTK's modules: nothing is left to do


if __name__ == "__main__":
    main()
