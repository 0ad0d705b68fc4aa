"""Conformance: the persistent shell (output, status, state, timeouts, recovery, capping)."""

from __future__ import annotations

import re
import time

from taskgym.sandbox.base import Backend, SandboxSpec
from taskgym.sandbox.conformance.registry import check, expect


@check
def check_exec_output_and_status(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("echo out; echo err >&2; exit_code() { return 3; }; exit_code")
        expect(r.stdout == "out\n", f"stdout was {r.stdout!r}")
        expect(r.stderr == "err\n", f"stderr was {r.stderr!r}")
        expect(r.exit_code == 3, f"exit code was {r.exit_code}")
        r = s.exec("printf 'no newline'")
        expect(r.stdout == "no newline", f"output without newline came back as {r.stdout!r}")


@check
def check_short_and_long_commands_agree(backend: Backend) -> None:
    """A backend may carry short commands differently; the shell must not tell the difference."""
    with backend.start(SandboxSpec()) as s:
        for command in ("return 3", 'echo "[$1] $#"', "local v=1; echo $v", "false",
                        "echo 'it''s' \\\\ \"x\"", "echo é", "ls -d /app /nonexistent", "-x",
                        ".", "%1", "v=2"):
            short = s.exec(command)
            long = s.exec(command + " # " + "padding " * 20)
            expect((short.stdout, _shell_message(short.stderr), short.exit_code)
                    == (long.stdout, _shell_message(long.stderr), long.exit_code),
                    f"{command!r}: {short} differs from {long}")
        expect(s.exec("return 3").exit_code == 3 and not s.exec("return 3").restarted,
                "return did not end just the command")


def _shell_message(stderr: str) -> str:
    """A shell error without where bash says it read the command (``bash: line 5: ``)."""
    return re.sub(r"(?m)^[^:\n]*: line \d+: ", "", stderr)


@check
def check_shell_state_persists(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("mkdir -p sub && cd sub && export GREETING=hello && count=41")
        r = s.exec('echo "$PWD $GREETING $((count + 1))"')
        expect(r.stdout.strip() == "/app/sub hello 42", f"state was lost: {r.stdout!r}")
        s.exec("declare -A short=([k]=v1)")  # declare at a prompt makes globals
        s.exec("declare -A long=([k]=v2) # " + "padding " * 20)
        r = s.exec('echo "${short[k]} ${long[k]}"')
        expect(r.stdout.strip() == "v1 v2", f"declared variables were lost: {r.stdout!r}")


@check
def check_stdin_is_not_the_control_channel(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("cat; read -r line; echo read=$?", timeout=5)
        expect(not r.timed_out and "read=1" in r.stdout, f"a command read stdin: {r}")
        expect(s.exec("echo still here").stdout == "still here\n", "the protocol broke")


@check
def check_timeout_kills_what_the_command_started(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("sleep 300 & echo started")  # started by an earlier command: must survive
        time.sleep(0.05)  # process start times have a resolution of one clock tick (10 ms)
        r = s.exec("sleep 301 & sleep 302", timeout=1)
        expect(r.timed_out and r.exit_code == 124, f"no timeout reported: {r}")
        expect(r.duration_sec < 10, f"the timeout took {r.duration_sec:.1f}s")
        ps = s.exec("ps -eo args").stdout
        expect("sleep 301" not in ps and "sleep 302" not in ps, f"processes survived:\n{ps}")
        expect("sleep 300" in ps, f"an earlier background job was killed:\n{ps}")


@check
def check_shell_builtin_loop_is_stopped(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.write_file("kept.txt", b"kept")
        r = s.exec("while :; do :; done", timeout=1)
        expect(r.timed_out and r.restarted, f"a hung shell was not replaced: {r}")
        expect(s.exec("cat kept.txt").stdout == "kept", "files were lost when the shell restarted")


@check
def check_shell_exit_recovers(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("echo data > file.txt")
        r = s.exec("exit 7")
        expect(r.restarted and r.exit_code == 7, f"exit was not reported: {r}")
        r = s.exec("pwd; cat file.txt")
        expect(r.stdout == "/app\ndata\n", f"after the shell exited: {r}")


@check
def check_killing_every_process_recovers(backend: Backend) -> None:
    """``kill -9 -1`` signals everything the sandbox user may: it must end the user's
    processes, never the sandbox holding them (a grader clears a sandbox this way)."""
    with backend.start(SandboxSpec()) as s:
        s.write_file("kept.txt", b"kept")
        s.exec("sleep 100 & kill -9 -1; echo after")
        r = s.exec("cat kept.txt")
        expect(r.stdout == "kept" and r.exit_code == 0, f"after kill -9 -1: {r}")
    result, _ = backend.run(SandboxSpec(), ["/bin/bash", "-c", "sleep 100 & kill -9 -1; echo survived"],
                            timeout=30)
    expect(result.stdout == "survived\n", f"a one-shot run that ran kill -9 -1: {result}")


@check
def check_output_is_capped(backend: Backend) -> None:
    spec = SandboxSpec(output_limit_bytes=4096, stream_limit_bytes=1 << 20)
    with backend.start(spec) as s:
        r = s.exec("head -c 300000 /dev/zero | tr '\\0' x; echo; echo tail-marker")
        expect(r.truncated and len(r.stdout) < 5000, f"{len(r.stdout)} characters came back")
        expect(r.stdout.rstrip().endswith("tail-marker"), "the tail of the output was lost")
        r = s.exec("yes", timeout=30)
        expect(r.truncated and r.duration_sec < 20, f"endless output was not stopped: {r.duration_sec}")
        expect(s.exec("echo ok").stdout == "ok\n", "the session did not survive endless output")


@check
def check_binary_and_unicode_output(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("echo 'héllo ✓ 漢字'; printf '\\377\\376\\n'")
        expect(r.stdout.startswith("héllo ✓ 漢字\n"), f"unicode mangled: {r.stdout!r}")
        expect("\ufffd" in r.stdout, "invalid UTF-8 was not replaced")
