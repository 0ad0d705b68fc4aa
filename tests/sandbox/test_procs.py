"""Reading /proc when this process has no descriptor left: an error, never "no such process".

Each case runs in a child Python whose soft RLIMIT_NOFILE is lowered to its lowest free
descriptor, so every open fails with EMFILE while the limit holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_PRELUDE = textwrap.dedent("""
    import errno, os, resource, subprocess, threading, time
    from taskgym.sandbox.host import procs
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    def exhausted():
        lowest = os.dup(0)
        os.close(lowest)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
    def restored():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    sleeper = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = procs.start_tick(sleeper.pid)
    assert start is not None
""")


def _run(body: str) -> str:
    proc = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_reading_a_live_process_without_descriptors_raises_emfile() -> None:
    out = _run("""
        exhausted()
        for read in (lambda: procs.start_tick(sleeper.pid), lambda: procs.children(os.getpid()),
                     lambda: procs.descendants(os.getpid())):
            try:
                got = read()
            except OSError as exc:
                print(errno.errorcode[exc.errno])
            else:
                print("returned", got)
        restored()
        print(procs.children(os.getpid()) == [sleeper.pid])
        sleeper.kill()
    """)
    assert out.split() == ["EMFILE", "EMFILE", "EMFILE", "True"]


def test_an_exited_process_still_reads_as_gone() -> None:
    out = _run("""
        sleeper.kill()
        sleeper.wait()
        print(procs.start_tick(sleeper.pid), procs.children(sleeper.pid), procs.descendants(sleeper.pid))
    """)
    assert out.split() == ["None", "[]", "[]"]


def test_wait_gone_waits_out_a_descriptor_shortage_and_then_kills() -> None:
    out = _run("""
        exhausted()
        threading.Timer(0.3, restored).start()
        procs.wait_gone(sleeper.pid, start, timeout=20)
        print(sleeper.poll() is not None or sleeper.wait(5) is not None)
    """)
    assert out.split() == ["True"]
