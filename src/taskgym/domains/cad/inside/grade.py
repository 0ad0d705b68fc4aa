"""Grade a submitted CadQuery script against the hidden reference, in a fresh sandbox.

Order matters, and is the defence:
1. Make this process non-dumpable (no other process can read its memory or its descriptors
   through /proc), then fork the runner: a child that closes every secret descriptor before
   anything is read from them, imports CadQuery and waits for "go" on a pipe. Nothing secret
   was ever in its memory.
2. Open the grading kit's channel (``gradekit``: the nonce, the report descriptor and the
   secret read, ``begun`` reported). The grader's own setup follows: import CadQuery (a
   ``dependency`` fault when it cannot), take the task settings and the reference from the
   secret (the reference never exists as a file here) and build it (a ``reference`` fault when
   it fails or is not one valid solid). Then report ``started`` and send "go": from here on the
   submitted script runs, and a grade that ends is the policy's (graded).
3. The runner runs /app/part.py (time, memory and file-size bounds) and writes its part as
   BREP. Once it ended (or was killed), every other process left in the sandbox is killed and
   the part is compared with the reference by this process's own, unpatched CadQuery.
4. Report the final record (``gate``, ``reason``, the measures).
With ``TASKGYM_CHECK_REFERENCE=1`` there is no submission: the record says whether the
reference is one valid solid.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import os  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, "/.taskgym-view")  # the grading kit's folder (-I leaves it out)
import gradekit  # noqa: E402  # type: ignore[import-not-found]

sys.path.pop(0)

FOLDER = os.path.dirname(os.path.abspath(__file__))
OUT = "/tmp/.grade"
PART = f"{OUT}/part.brep"
ERROR = f"{OUT}/error.txt"


def fork_runner(memory_mb: int) -> tuple[int, int]:
    """The runner's pid and the descriptor that tells it "go" (step 1 and 3 above)."""
    os.makedirs(OUT, exist_ok=True)
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(go_r)
        return pid, go_w
    try:
        os.close(go_w)
        gradekit.drop_channel()
        os.setsid()
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
        sys.path.insert(0, FOLDER)
        import geometry
        if os.read(go_r, 1) != b"g":
            os._exit(3)  # the grader ended in its setup: nothing to run
        os.close(go_r)
        with open("/proc/self/statm") as statm:
            limit = int(statm.read().split()[0]) * resource.getpagesize() + (memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))
        with open("/app/part.py", encoding="utf-8", errors="replace") as source:
            shape = geometry.shape_from_code(source.read(), "/app/part.py")
        geometry.save_brep(shape, PART)
        os._exit(0)
    except BaseException:
        try:
            with open(ERROR, "w") as error:
                error.write(traceback.format_exc(limit=-2)[-1500:])
        finally:
            os._exit(1)


def wait_runner(pid: int, timeout: float) -> str | None:
    """Wait for the runner; ``None`` when it wrote a part, else why not."""
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


def setup(channel: Any) -> tuple[Any, dict[str, Any], Any] | None:
    """The grader's own setup: the compare module, the settings and the built reference, or
    ``None`` once it reported why it cannot grade (nothing of the agent's is read here)."""
    sys.path.insert(0, FOLDER)
    try:
        import compare as compare_parts
        import geometry
    except ImportError as exc:
        channel.fault("dependency", f"the grading sandbox's Python cannot import the CAD grader's "
                      f"libraries ({exc}): install taskgym's cad extra for it (`taskgym doctor` "
                      "checks it)")
        return None
    settings, data = channel.secret.settings, channel.secret.files["reference"]
    if os.environ.get("TASKGYM_CHECK_REFERENCE") == "1":
        return compare_parts, settings, data  # checking the reference is the whole grade
    try:
        reference = geometry.load_reference(settings["reference_kind"], data, settings["units"])
        fault = compare_parts.reference_problem(reference)
    except Exception:
        fault = "it could not be built:\n" + traceback.format_exc(limit=-2)[-1500:]
    if fault is not None:
        channel.fault("reference", f"the task's reference part is at fault: {fault}")
        return None
    return compare_parts, settings, reference


def check_reference(compare_parts: Any, settings: dict[str, Any], data: bytes) -> dict[str, Any]:
    """Only the reference: whether it is one valid solid (a task check, no submission)."""
    import geometry
    try:
        reference = geometry.load_reference(settings["reference_kind"], data, settings["units"])
    except Exception:
        return {"gate": False, "reference_fault": True, "reason": "the reference could not be "
                "built:\n" + traceback.format_exc(limit=-2)[-1500:]}
    fault = compare_parts.reference_problem(reference)
    return {"gate": fault is None, "reason": fault, "reference_fault": fault is not None,
            "reference_properties": geometry.properties(reference)}


def grade(compare_parts: Any, settings: dict[str, Any], reference: Any, runner: int,
          go: int, timeout: float) -> tuple[dict[str, Any], float]:
    """Let the runner go, wait for it and compare its part; the record and when it ended."""
    import geometry
    os.write(go, b"g")
    os.close(go)
    failure = wait_runner(runner, timeout)
    ran = time.monotonic()
    if failure is not None:
        return {"gate": False, "reason": failure}, ran
    try:
        return compare_parts.evaluate(settings, geometry.load_brep(PART), reference), ran
    except Exception as exc:  # its message may quote the reference: its type and place only
        error = gradekit.failure(exc)
        return {"gate": False, "error": error, "reason": "the part could not be compared with "
                f"the reference ({error['type']} at {', '.join(error['at'])})"}, ran


def main(channel: Any, runner: int, go: int) -> None:
    """The grade on ``channel`` (opened after the runner was forked): setup, then the script."""
    ready = setup(channel)
    imported = time.monotonic()
    if ready is None:
        return  # the runner reads end-of-file on "go" and exits
    channel.started()  # from here on the submitted script runs: its failures are graded
    if runner == 0:
        record, ran = check_reference(*ready), imported
    else:
        record, ran = grade(*ready, runner, go, timeout=float(os.environ.get("TASKGYM_RUN_TIMEOUT", "60")))
    record["timing"] = {"import_sec": imported - STARTED, "user_code_sec": ran - imported,
                        "compare_sec": time.monotonic() - ran}
    channel.final(**record)


if __name__ == "__main__":
    gradekit.undumpable()  # before the fork: the runner is never dumpable either
    only_reference = os.environ.get("TASKGYM_CHECK_REFERENCE") == "1"
    memory_mb = int(os.environ.get("TASKGYM_RUN_MEMORY_MB", "1024"))
    RUNNER, GO = (0, -1) if only_reference else fork_runner(memory_mb)
    gradekit.run(lambda channel: main(channel, RUNNER, GO))
