"""Grade a Godot project in a fresh sandbox; the hidden check arrives by descriptor.

1. Become non-dumpable (no process here can read this one's memory or descriptors), read
   the nonce and the secret (the check's GDScript and the time bound), close those.
2. Refuse projects that could run code before the harness or hide from it: autoloads,
   native libraries, scripts embedded in scenes, calls that reach the engine's internals.
3. Write the check and a one-time token to a private folder; run the engine on
   /.game/harness.gd with --fixed-fps; a process group that outlives the bound is killed.
4. Keep the one stdout line tagged with the token (none, or more than one: a failed grade)
   and report it, nonce-tagged, on TASKGYM_REPORT_FD.
"""

from __future__ import annotations

import ctypes
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

APP = Path("/app")
HARNESS = Path(__file__).with_name("harness.gd")
ENGINE_ARGS = ["--no-window", "--audio-driver", "Dummy", "--fixed-fps", "60"]
BANNED_CALLS = re.compile(
    r"instance_from_id|set_script|\.script\b|[\"']script[\"']|source_code|\bGDScript\b|NativeScript|"
    r"PluginScript|\bOS\b|\bFile\b|\bDirectory\b|ConfigFile|ProjectSettings|Marshalls|/proc|\bThread\b|"
    r"\bquit\s*\(|get_main_loop|\breload\s*\(|\bExpression\b|\bJavaScript\b|\bEngine\b|\bClassDB\b|"
    r"\b(str2var|bytes2var|dict2inst|funcref|callv|call_deferred|set_deferred|set_indexed)\b|"
    r"\.\s*(call|set)\s*\("
)
"""What graded project code may not name: the ways it could reach the harness, the check, the
file system or the process (a dynamic ``call``/``set`` or ``ClassDB.instance`` would get round
a name, ``OS`` starts processes, ``File`` reads ``/proc/self/mem``). Scenes need none of it."""
NOISE = re.compile(
    r"locale|At: core/translation|^Godot Engine|^\s*$|ObjectDB instances leaked|"
    r"Resources still in use|run with --verbose|At: core/(object|resource)\.cpp"
)


def refusal(app: Path) -> str | None:
    """Why the project may not be graded, or ``None``."""
    settings = app / "project.godot"
    if not settings.is_file():
        return "project.godot is missing"
    text = settings.read_text(errors="replace")
    for pattern, what in (
        (r"(?m)^\[autoload\]", "autoloads"),
        (r"(?m)^\s*singletons\s*=", "GDNative singletons"),
        (r"(?m)^\[editor_plugins\]", "editor plugins"),
    ):
        if re.search(pattern, text):
            return f"project.godot declares {what}, which graded projects may not"
    for path in sorted(app.rglob("*")):
        if path.is_symlink():
            return f"{path} is a symbolic link"
        if not path.is_file() or ".import" in path.parts:
            continue
        if path.suffix in (".gdns", ".gdnlib", ".so", ".dll", ".dylib", ".cs"):
            return f"{path}: native or C# code is not allowed in graded projects"
        if path.suffix in (".tscn", ".tres", ".gd") and path.stat().st_size > 4 << 20:
            return f"{path} is over 4 MB"
        if path.suffix in (".tscn", ".tres") and re.search(
            r'type="(GDScript|NativeScript)"', path.read_text(errors="replace")
        ):
            return f"{path} embeds a script; save scripts as .gd files"
        if path.suffix == ".gd":
            found = BANNED_CALLS.search(path.read_text(errors="replace"))
            if found:
                return f"{path}: {found.group(0)!r} reaches the engine's internals (not allowed when graded)"
    return None


def run_engine(check: str, timeout: float) -> tuple[dict[str, Any] | None, str, str]:
    """(the harness's record or None, why not, the engine log's tail)."""
    work = Path(tempfile.mkdtemp(prefix=".", dir="/tmp"))
    token = secrets.token_hex(16)
    (work / f"{secrets.token_hex(8)}.gd").write_text(check)
    check_path = next(work.glob("*.gd"))
    (work / "token").write_text(token)
    out_path, err_path = work / "out", work / "err"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "LANG": "C.UTF-8",
        "TASKGYM_GAME_TOKEN": str(work / "token"),
        "TASKGYM_GAME_CHECK": str(check_path),
    }
    engine = shutil.which("godot3-server") or "godot3-server"
    why = ""
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [engine, *ENGINE_ARGS, "--path", str(APP), "-s", str(HARNESS)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            cwd=APP,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            why = f"the engine ran past {timeout:g}s (an endless loop?) and was stopped"
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    prefix = token.encode() + b" "
    tagged = [line for line in out_path.read_bytes().splitlines() if line.startswith(prefix)]
    log = [
        line
        for line in (err_path.read_bytes()[-200_000:] + out_path.read_bytes()[-20_000:])
        .decode(errors="replace")
        .splitlines()
        if not NOISE.search(line) and not line.startswith(token)
    ]
    tail = "\n".join(log)[-3000:]
    shutil.rmtree(work, ignore_errors=True)
    if why:
        return None, why, tail
    if len(tagged) != 1:
        return (
            None,
            (
                f"the engine ended (exit {proc.returncode}) without the check's report"
                if not tagged
                else "the check reported more than once"
            ),
            tail,
        )
    try:
        record = json.loads(tagged[0][len(prefix) :])
    except ValueError:
        return None, "the check's report is not JSON", tail
    return (
        (record, "", tail)
        if isinstance(record, dict)
        else (None, "the check's report is not an object", tail)
    )


def main() -> None:
    started = time.monotonic()
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    nonce_fd, secret_fd = int(os.environ["TASKGYM_NONCE_FD"]), int(os.environ["TASKGYM_SECRET_FD"])
    with os.fdopen(nonce_fd, "rb") as stream:
        nonce = stream.read(64).decode()
    with os.fdopen(secret_fd, "rb") as stream:
        secret = json.loads(stream.read())
    report = os.fdopen(int(os.environ["TASKGYM_REPORT_FD"]), "w")
    reason = refusal(APP)
    if reason is not None:
        record: dict[str, Any] = {"ok": False, "reason": reason}
        log = ""
    else:
        found, why, log = run_engine(secret["check"], float(secret["timeout"]))
        record = found if found is not None else {"ok": False, "reason": why}
    record.update(final=True, log=log, seconds=round(time.monotonic() - started, 3))
    report.write(f"{nonce} {json.dumps(record)}\n")
    report.flush()


if __name__ == "__main__":
    sys.exit(main())
