import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

SVCCTL = "/app/bin/svcctl"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def server_pids(port):
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"echo_server.py") for a in args) and str(port).encode() in args and alive(int(d)):
            pids.append(int(d))
    return pids


class Env:
    def __init__(self, tmp_path):
        self.port = free_port()
        self.run_dir = tmp_path / "run dir"  # spaces on purpose
        self.pidfile = self.run_dir / "echo.pid"

    def ctl(self, cmd, timeout=20):
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "SVC_PORT": str(self.port), "SVC_RUN_DIR": str(self.run_dir)}
        return subprocess.run(["/bin/bash", SVCCTL, cmd], env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def get(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=3) as r:
            return json.loads(r.read())

    def pid(self):
        return int(self.pidfile.read_text().strip())


@pytest.fixture
def env(tmp_path):
    e = Env(tmp_path)
    extra = []
    e.extra = extra
    try:
        yield e
    finally:
        for p in extra:
            if p.poll() is None:
                p.kill()
            p.wait()
        for pid in server_pids(e.port):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def wait_listening(e, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            return e.get()
        except OSError:
            time.sleep(0.1)
    raise AssertionError("server not answering")


def test_start_serves(env, tmp_path):
    env.run_dir = tmp_path / "run"
    env.run_dir.mkdir()
    r = env.ctl("start")
    assert r.returncode == 0, r.stderr
    assert wait_listening(env)["service"] == "echo"


def test_start_writes_server_pid_and_waits(env):
    r = env.ctl("start")
    assert r.returncode == 0, r.stdout + r.stderr
    info = env.get()  # no waiting: start must only return once the server listens
    assert env.pid() == info["pid"]
    assert server_pids(env.port) == [info["pid"]]
    s = env.ctl("status")
    assert s.returncode == 0 and s.stdout.strip() == f"running (pid {info['pid']})"


def test_double_start_keeps_single_instance(env):
    assert env.ctl("start").returncode == 0
    pid = env.pid()
    r = env.ctl("start")
    assert r.returncode == 0 and r.stdout.strip() == f"already running (pid {pid})"
    time.sleep(0.3)
    assert server_pids(env.port) == [pid] and env.pid() == pid


def test_stop_waits_for_exit(env):
    assert env.ctl("start").returncode == 0
    pid = env.pid()
    r = env.ctl("stop")
    assert r.returncode == 0
    assert not alive(pid), "stop returned before the server exited"
    assert not env.pidfile.exists()
    assert "shutdown complete" in (env.run_dir / "echo.log").read_text()  # graceful, not SIGKILL
    with socket.socket() as s:
        s.bind(("127.0.0.1", env.port))
    s = env.ctl("status")
    assert s.returncode == 3 and s.stdout.strip() == "stopped"
    assert env.ctl("stop").returncode == 0  # stopping a stopped service is fine


def test_stale_pidfile_of_dead_process(env):
    env.run_dir.mkdir()
    p = subprocess.Popen(["/bin/true"])
    p.wait()
    env.pidfile.write_text(f"{p.pid}\n")
    s = env.ctl("status")
    assert s.returncode == 1 and s.stdout.strip() == "stale pid file"
    r = env.ctl("start")
    assert r.returncode == 0, r.stdout + r.stderr
    assert env.pid() == env.get()["pid"] != p.pid


def test_pid_reused_by_unrelated_process(env):
    env.run_dir.mkdir()
    bystander = subprocess.Popen(["/bin/sleep", "60"])
    env.extra.append(bystander)
    env.pidfile.write_text(f"{bystander.pid}\n")
    assert env.ctl("status").returncode == 1
    assert env.ctl("stop").returncode == 0
    time.sleep(0.2)
    assert bystander.poll() is None, "svcctl signalled a process that is not the server"
    assert not env.pidfile.exists()
    env.pidfile.write_text(f"{bystander.pid}\n")
    r = env.ctl("start")
    assert r.returncode == 0, r.stdout + r.stderr
    assert env.pid() == env.get()["pid"] != bystander.pid
    assert bystander.poll() is None


def test_start_fails_cleanly_when_port_taken(env):
    holder = socket.socket()
    holder.bind(("127.0.0.1", env.port))
    holder.listen(5)
    try:
        t0 = time.time()
        r = env.ctl("start")
        assert r.returncode == 1, r.stdout + r.stderr
        assert time.time() - t0 < 10
        assert not env.pidfile.exists()
        time.sleep(0.2)
        assert server_pids(env.port) == []
    finally:
        holder.close()


def test_restart_and_usage(env):
    assert env.ctl("start").returncode == 0
    old = env.pid()
    r = env.ctl("restart")
    assert r.returncode == 0, r.stdout + r.stderr
    new = env.pid()
    assert new != old and not alive(old)
    assert env.get()["pid"] == new
    assert server_pids(env.port) == [new]
    u = env.ctl("bogus")
    assert u.returncode == 2 and "usage" in u.stderr.lower()
