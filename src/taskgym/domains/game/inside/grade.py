"""Grade a Godot project in a fresh sandbox; the hidden check arrives by descriptor.

1. Open the grading kit's channel (``gradekit``: non-dumpable, the nonce and the secret read:
   the check's GDScript, the time bound, whether the task allows scripts; ``begun`` reported).
   The grader's own setup: the engine found and answering ``--version`` (else a ``dependency``
   fault), the check's source text with an ``evaluate`` function (else a ``reference`` fault);
   then ``started``, before
   anything of /app is read (taskgym.core.verdicts: a grade that ends between the two phases has
   no verdict; from ``started`` on, a refusal, an engine that hangs or crashes are graded).
2. Build the graded project from /app with :mod:`graded_project`: only allow-listed
   scenes, resources and scripts, checked by real grammars (:mod:`text_resources`,
   :mod:`gdscript`), and the grader's own project.godot (physics pinned); anything else the
   engine could load refuses.
3. In a private 0700 folder: the check, a one-time token and the report file. The engine runs
   /.game/harness.gd on the graded project with --fixed-fps; a process group that outlives the
   bound is killed. The harness opens the report file before any project code loads and
   writes one line, "<token> <JSON>", at the end: stdout is only the log.
4. Report the final record: ``gate`` (the check reported), the checks' names and results, or a
   ``cause`` (a refusal's reason, written here before any project code ran); the engine's log
   goes to the host's logs under ``log`` (the host never shows it to the agent).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).parent), "/.taskgym-view"]  # -I leaves both off the path

import graded_project  # noqa: E402
import gradekit  # noqa: E402  # type: ignore[import-not-found]

sys.path.remove("/.taskgym-view")

APP = Path("/app")
ENGINE = "godot3-server"
VERSION = re.compile(rb"^\d+\.\d+")
"""What the engine's ``--version`` prints first (Godot 3 exits with status 255 after it)."""
HARNESS = Path(__file__).with_name("harness.gd")
ENGINE_ARGS = ["--no-window", "--audio-driver", "Dummy", "--fixed-fps", "60"]
NOISE = re.compile(
    r"locale|At: core/translation|^Godot Engine|^\s*$|ObjectDB instances leaked|"
    r"Resources still in use|run with --verbose|At: core/(object|resource)\.cpp"
)


def run_engine(graded: Path, work: Path, check: str, timeout: float) -> tuple[dict[str, Any], str]:
    """Play the check on the project at ``graded``: (the record, the engine log's tail). A
    record without ``checks`` has ``gate`` false and a ``cause`` (a name of the host's fixed
    reasons)."""
    token = secrets.token_hex(16)
    check_path = work / f"{secrets.token_hex(8)}.gd"
    check_path.write_text(check)
    (work / "token").write_text(token)
    report_path, out_path = work / "report", work / "out"
    report_path.touch(mode=0o600)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "LANG": "C.UTF-8",
        "TASKGYM_GAME_TOKEN": str(work / "token"),
        "TASKGYM_GAME_CHECK": str(check_path),
        "TASKGYM_GAME_REPORT": str(report_path),
    }
    engine = shutil.which(ENGINE) or ENGINE
    timed_out = False
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(
            [engine, *ENGINE_ARGS, "--path", str(graded), "-s", str(HARNESS)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=graded,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    log = "\n".join(
        line for line in out_path.read_bytes()[-200_000:].decode(errors="replace").splitlines()
        if not NOISE.search(line)
    )[-3000:]
    lines = report_path.read_bytes()[:1_000_000].splitlines()
    if timed_out:
        return {"gate": False, "cause": "timeout"}, log
    prefix = token.encode() + b" "
    if len(lines) != 1 or not lines[0].startswith(prefix):
        return {"gate": False, "cause": "no-report" if not lines else "bad-report"}, log
    try:
        record = json.loads(lines[0][len(prefix):])
    except ValueError:
        record = None
    if not isinstance(record, dict) or record.get("cause") == "refused" or not isinstance(
            record.get("ok"), bool):
        return {"gate": False, "cause": "bad-report"}, log
    checks, cause = record.get("checks"), record.get("cause")  # the harness's own words
    if not isinstance(cause, str):
        cause = None
    return ({"gate": True, "checks": checks} if record["ok"] else {"gate": False, "cause": cause}), log


def setup(channel: Any, secret: dict[str, Any]) -> bool:
    """The grader's own setup, before anything of the agent's is read: the engine runs and the
    check is source text; ``False``, with a ``dependency`` or ``reference`` record sent, when
    not (the environment's fault)."""
    engine = shutil.which(ENGINE)
    problem = f"{ENGINE} is not on the grading sandbox's PATH" if engine is None else ""
    if engine is not None:
        try:
            probe = subprocess.run([engine, "--version"], stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
            if not VERSION.match(probe.stdout):
                problem = (f"{engine} --version printed no version (exit status "
                           f"{probe.returncode}): {probe.stderr[-300:].decode(errors='replace')}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = f"{engine} could not be run: {exc}"
    if problem:
        channel.fault("dependency", f"the grading sandbox's game engine does not run ({problem}): "
                      f"install {ENGINE} (`taskgym doctor` checks it)")
        return False
    check = secret.get("check")
    if not isinstance(check, str) or "func evaluate" not in check:
        channel.fault("reference", "the task's tests/check.gd has no evaluate function; fix the task")
        return False
    return True


def main(channel: Any) -> None:
    started = time.monotonic()
    secret = channel.secret.settings
    if not setup(channel, secret):
        return
    channel.started()  # from here on the agent's project is read and run: graded
    work = Path(tempfile.mkdtemp(prefix=".", dir="/tmp"))  # mode 0700
    record: dict[str, Any]
    log = ""
    try:
        graded_project.build(APP, work / "project", scripts_allowed=secret["scripts"] != "none")
    except graded_project.Refused as refused:
        record = {"gate": False, "cause": "refused", "reason": str(refused)[:1000]}
    else:
        record, log = run_engine(work / "project", work, secret["check"], float(secret["timeout"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    channel.final(**record, log=log, seconds=round(time.monotonic() - started, 3))


if __name__ == "__main__":
    gradekit.run(main)
