import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

SERVICE = "/app/inventory/service.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, method, path, body=None, timeout=3):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def svc(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    p = subprocess.Popen(["/usr/bin/python3", SERVICE, "--port", str(port), "--data-dir", str(data)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
    try:
        deadline = time.time() + 8
        while True:
            assert p.poll() is None, p.stderr.read().decode()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.time() < deadline, "service did not start"
                time.sleep(0.05)
        yield port, data
    finally:
        os.chmod(data, 0o755) if data.exists() else None
        p.kill()
        p.wait(timeout=5)


def healthz(port):
    t0 = time.time()
    code, body = call(port, "GET", "/healthz", timeout=3)
    assert time.time() - t0 < 1.5, "/healthz took too long"
    return code, body


def wait_for(port, pred, timeout=6):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = healthz(port)
        if pred(*last):
            return last
        time.sleep(0.15)
    raise AssertionError(f"condition not reached, last /healthz: {last}")


def is_ok(code, body):
    return code == 200 and body == {"status": "ok", "checks": {"storage": "ok", "flusher": "ok"}}


def test_events_and_stock_still_work(svc):
    port, data = svc
    assert call(port, "POST", "/events", {"sku": "A-1", "delta": 10}) == (202, {"queued": True})
    assert call(port, "POST", "/events", {"sku": "A-1", "delta": -3}) == (202, {"queued": True})
    assert call(port, "POST", "/events", {"sku": "A-1", "delta": "x"})[0] == 400
    assert call(port, "POST", "/events", {"delta": 1})[0] == 400
    assert call(port, "GET", "/stock/A-1") == (200, {"sku": "A-1", "stock": 7})
    assert call(port, "GET", "/stock/B-9") == (200, {"sku": "B-9", "stock": 0})
    deadline = time.time() + 5
    while time.time() < deadline:
        log = data / "events.log"
        if log.exists() and len(log.read_text().splitlines()) == 2:
            break
        time.sleep(0.1)
    assert [json.loads(x) for x in (data / "events.log").read_text().splitlines()] == \
        [{"sku": "A-1", "delta": 10}, {"sku": "A-1", "delta": -3}]


def test_healthy_reports_checks_even_when_idle(svc):
    port, _ = svc
    assert is_ok(*healthz(port))
    time.sleep(2.8)  # no events at all: idle flusher iterations still count
    assert is_ok(*healthz(port))
    assert [p for p in os.listdir(svc[1]) if p != "events.log"] == []  # probe files cleaned up


def test_read_only_storage(svc):
    port, data = svc
    assert is_ok(*healthz(port))
    os.chmod(data, 0o555)
    code, body = wait_for(port, lambda c, b: c == 503)
    assert body["status"] == "fail"
    assert body["checks"]["storage"].startswith("fail") and body["checks"]["flusher"] == "ok"
    os.chmod(data, 0o755)
    wait_for(port, is_ok)


def test_missing_storage(svc):
    port, data = svc
    moved = data.parent / "moved"
    data.rename(moved)
    try:
        code, body = wait_for(port, lambda c, b: c == 503)
        assert body["status"] == "fail" and body["checks"]["storage"].startswith("fail")
    finally:
        moved.rename(data)
    wait_for(port, is_ok)


def test_stuck_flusher_detected_and_recovers(svc):
    port, data = svc
    os.mkfifo(data / "events.log")  # a write that blocks, like a hung NFS mount
    assert call(port, "POST", "/events", {"sku": "Z", "delta": 1})[0] == 202
    time.sleep(0.6)
    assert is_ok(*healthz(port))  # still within the 2 s budget
    code, body = wait_for(port, lambda c, b: c == 503, timeout=6)
    assert body["status"] == "fail"
    assert body["checks"]["flusher"].startswith("fail") and body["checks"]["storage"] == "ok"
    fd = os.open(data / "events.log", os.O_RDONLY | os.O_NONBLOCK)
    try:
        wait_for(port, is_ok)
        assert json.loads(os.read(fd, 4096).decode().strip()) == {"sku": "Z", "delta": 1}
    finally:
        os.close(fd)


def test_health_body_shape(svc):
    port, _ = svc
    code, body = healthz(port)
    assert code == 200
    assert list(body) == ["status", "checks"] or set(body) == {"status", "checks"}
    assert type(body["checks"]["storage"]) is str and type(body["checks"]["flusher"]) is str
