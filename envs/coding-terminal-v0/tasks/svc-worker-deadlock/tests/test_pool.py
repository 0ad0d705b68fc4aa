import json
import random
import subprocess
import textwrap

import pytest

DRIVER = textwrap.dedent('''
    import json, sys, threading, time
    sys.path.insert(0, "/app")
    from jobrunner.pool import run_jobs, Report

    class Boom(Exception):
        pass

    scenario = sys.argv[1]
    out = {}
    if scenario == "simple":
        r = run_jobs(((i, i) for i in range(50)), lambda x: x * x, workers=4)
    elif scenario == "failures":
        def h(x):
            if x % 3 == 0:
                raise Boom(f"bad {x}")
            return -x
        r = run_jobs([(f"j{i}", i) for i in range(30)], h, workers=3, retries=0, queue_size=2)
    elif scenario == "retries":
        attempts = {}
        lk = threading.Lock()
        def h(x):
            with lk:
                attempts[x] = attempts.get(x, 0) + 1
                n = attempts[x]
            if n <= x % 4:
                raise Boom(f"{x} attempt {n}")
            return x + 1000
        r = run_jobs([(i, i) for i in range(40)], h, workers=4, retries=2, queue_size=3)
        out["attempts"] = sorted(attempts.items())
    elif scenario == "slow_producer":
        def gen():
            for burst in range(3):
                for k in range(5):
                    yield (burst * 10 + k, burst * 10 + k)
                time.sleep(0.8)
        r = run_jobs(gen(), lambda x: str(x), workers=4, queue_size=4)
    elif scenario == "concurrency":
        cur = [0, 0]
        lk = threading.Lock()
        def h(x):
            with lk:
                cur[0] += 1
                cur[1] = max(cur[1], cur[0])
            time.sleep(0.1)
            with lk:
                cur[0] -= 1
            return x
        t0 = time.time()
        r = run_jobs([(i, i) for i in range(24)], h, workers=4, queue_size=8)
        out["max_concurrent"] = cur[1]
        out["elapsed"] = time.time() - t0
    elif scenario == "backpressure":
        st = {"pulled": 0, "finished": 0, "worst": 0}
        lk = threading.Lock()
        def gen():
            for i in range(60):
                with lk:
                    st["pulled"] += 1
                    st["worst"] = max(st["worst"], st["pulled"] - st["finished"])
                yield (i, i)
        def h(x):
            time.sleep(0.005)
            with lk:
                st["finished"] += 1
            if x % 7 == 0:
                raise Boom("x")
            return x
        r = run_jobs(gen(), h, workers=3, queue_size=5, retries=1)
        out["worst"] = st["worst"]
    elif scenario == "stress":
        import random
        rnd = random.Random(int(sys.argv[2]))
        fails = {i: rnd.randint(0, 3) for i in range(1500)}
        seen = {}
        lk = threading.Lock()
        def h(x):
            with lk:
                seen[x] = seen.get(x, 0) + 1
                n = seen[x]
            if n <= fails[x]:
                raise Boom(f"{x}/{n}")
            return x * 2
        r = run_jobs(((i, i) for i in range(1500)), h, workers=8, retries=2, queue_size=2)
        out["calls"] = sum(seen.values())
    out["type"] = type(r).__name__
    out["results"] = sorted([[repr(k), repr(v)] for k, v in r.results.items()])
    out["errors"] = sorted([[repr(k), v] for k, v in r.errors.items()])
    out["threads"] = threading.active_count()
    print(json.dumps(out))
''')


def run(tmp_path, *args, timeout=10, check_threads=True):
    d = tmp_path / "driver.py"
    d.write_text(DRIVER)
    try:
        p = subprocess.run(["/usr/bin/python3", str(d), *args], capture_output=True, text=True, timeout=timeout,
                           cwd=str(tmp_path))
    except subprocess.TimeoutExpired:
        pytest.fail(f"run_jobs hung (scenario {args[0]})")
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["type"] == "Report"
    if check_threads:
        assert out["threads"] == 1, "worker threads are still running after run_jobs returned"
    return out


def pairs(d):
    return sorted([repr(k), repr(v)] for k, v in d.items())


def test_simple_all_succeed(tmp_path):
    out = run(tmp_path, "simple", check_threads=False)
    assert out["results"] == pairs({i: i * i for i in range(50)})
    assert out["errors"] == []


def test_failures_are_reported_not_hung(tmp_path):
    out = run(tmp_path, "failures")
    assert out["results"] == pairs({f"j{i}": -i for i in range(30) if i % 3})
    assert out["errors"] == sorted([repr(f"j{i}"), f"Boom('bad {i}')"] for i in range(30) if i % 3 == 0)


def test_retries(tmp_path):
    out = run(tmp_path, "retries")
    ok = {i: i + 1000 for i in range(40) if i % 4 <= 2}
    assert out["results"] == pairs(ok)
    assert out["errors"] == sorted([repr(i), f"Boom('{i} attempt 3')"] for i in range(40) if i % 4 == 3)
    assert out["attempts"] == [[i, min(i % 4 + 1, 3)] for i in range(40)]


def test_slow_producer_loses_nothing(tmp_path):
    out = run(tmp_path, "slow_producer")
    ids = [b * 10 + k for b in range(3) for k in range(5)]
    assert out["results"] == pairs({i: str(i) for i in ids})


def test_runs_workers_concurrently(tmp_path):
    out = run(tmp_path, "concurrency")
    assert out["max_concurrent"] == 4
    assert len(out["results"]) == 24


def test_consumes_jobs_lazily(tmp_path):
    out = run(tmp_path, "backpressure")
    assert 1 <= out["worst"] <= 5 + 3 + 1
    assert len(out["results"]) + len(out["errors"]) == 60
    assert out["errors"] == sorted([repr(i), "Boom('x')"] for i in range(60) if i % 7 == 0)


def test_stress_every_job_accounted(tmp_path):
    seed = 20240607
    out = run(tmp_path, "stress", str(seed), timeout=15)
    rnd = random.Random(seed)
    fails = {i: rnd.randint(0, 3) for i in range(1500)}
    assert out["results"] == pairs({i: i * 2 for i in range(1500) if fails[i] <= 2})
    assert out["errors"] == sorted([repr(i), f"Boom('{i}/3')"] for i in range(1500) if fails[i] == 3)
    assert out["calls"] == sum(min(f + 1, 3) for f in fails.values())
