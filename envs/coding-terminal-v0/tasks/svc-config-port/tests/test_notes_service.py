import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

SERVER = "/app/notes_service/server.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cfg_path, env_extra=None):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    env.update(env_extra or {})
    return subprocess.Popen(["/usr/bin/python3", SERVER, "--config", str(cfg_path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_up(proc, port, timeout=8):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited {proc.returncode}: {proc.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("server did not start listening")


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=5)


def request(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def write_cfg(tmp_path, listen, max_notes="3"):
    p = tmp_path / "notes.ini"
    p.write_text("# test config\n[server]\n"
                 f"listen = {listen}    ; inline comment\n\n[limits]\n; limit for tests\n"
                 f"max_notes = {max_notes}  # small\n")
    return p


@pytest.fixture
def server(tmp_path):
    procs = []

    def run(cfg, env_extra=None):
        p = start(cfg, env_extra)
        procs.append(p)
        return p
    yield run
    for p in procs:
        stop(p)


def test_store_unit():
    import notes_service.server as srv
    s = srv.NotesStore(2)
    assert s.add("a") == {"id": 1, "text": "a"}
    assert s.add("b")["id"] == 2
    assert s.add("c") is None
    assert [n["text"] for n in s.all()] == ["a", "b"]


@pytest.mark.parametrize("value,expected", [
    ("10.0.0.5:9000", ("10.0.0.5", 9000)),
    ("localhost:80", ("localhost", 80)),
    ("[::1]:8081", ("::1", 8081)),
    (":8080", ("0.0.0.0", 8080)),
    ("  8080 ", ("127.0.0.1", 8080)),
])
def test_parse_listen(value, expected):
    import notes_service.server as srv
    got = srv.parse_listen(value)
    assert type(got) is tuple and len(got) == 2
    assert type(got[0]) is str and type(got[1]) is int
    assert (got[0], got[1]) == expected


def test_parse_listen_rejects_bad_ports():
    import notes_service.server as srv
    for bad in ("127.0.0.1:abc", "127.0.0.1:0", "127.0.0.1:70000", "host:", "[::1]:-5"):
        with pytest.raises(ValueError):
            srv.parse_listen(bad)


def test_starts_with_inline_comments_and_api_works(tmp_path, server):
    port = free_port()
    p = server(write_cfg(tmp_path, f"127.0.0.1:{port}"))
    wait_up(p, port)
    assert request(port, "GET", "/health") == (200, {"status": "ok", "notes": 0})
    assert request(port, "POST", "/notes", {"text": "deploy at 5"}) == (201, {"id": 1, "text": "deploy at 5"})
    assert request(port, "POST", "/notes", {"nope": 1})[0] == 400
    request(port, "POST", "/notes", {"text": "b"})
    request(port, "POST", "/notes", {"text": "c"})
    assert request(port, "POST", "/notes", {"text": "d"})[0] == 507
    code, notes = request(port, "GET", "/notes")
    assert code == 200 and [n["text"] for n in notes] == ["deploy at 5", "b", "c"]
    assert request(port, "GET", "/health")[1]["notes"] == 3


def test_env_port_override(tmp_path, server):
    cfg_port, env_port = free_port(), free_port()
    p = server(write_cfg(tmp_path, f"127.0.0.1:{cfg_port}"), {"NOTES_PORT": str(env_port)})
    wait_up(p, env_port)
    assert request(env_port, "GET", "/health")[0] == 200
    line = p.stdout.readline().strip()
    assert line == f"notes_service listening on 127.0.0.1:{env_port}"


def test_missing_config_exits_2(tmp_path):
    p = start(tmp_path / "does-not-exist.ini")
    try:
        out, err = p.communicate(timeout=10)
    finally:
        stop(p)
    assert p.returncode == 2
    assert "does-not-exist.ini" in err and "Traceback" not in err


def test_bad_port_exits_2(tmp_path):
    for listen, env in (("127.0.0.1:99999", {}), (f"127.0.0.1:{free_port()}", {"NOTES_PORT": "http"})):
        p = start(write_cfg(tmp_path, listen), env)
        try:
            out, err = p.communicate(timeout=10)
        finally:
            stop(p)
        assert p.returncode == 2, err
        assert err.strip() and "Traceback" not in err
