import random
import subprocess

import pytest

BEFORE = "8428fa2786e9307844bfe73902c53bc410ab7bb3"
GIT = "/usr/bin/git"
JITTER = "Add full jitter to retry backoff"
RA = "Honour Retry-After when rate limited"


def git(*args):
    return subprocess.run([GIT, "-C", "/app", *args], capture_output=True, text=True, check=True).stdout.strip()


def test_history_kept_and_commits_recovered():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    subprocess.run([GIT, "-C", "/app", "merge-base", "--is-ancestor", BEFORE, "main"], check=True)
    new = git("log", "--reverse", "--format=%s|%an|%ae", f"{BEFORE}..main").splitlines()
    assert new == [f"{JITTER}|Mia Castellanos|mia@netkit.example", f"{RA}|Mia Castellanos|mia@netkit.example"]
    subjects = git("log", "--format=%s", "main").splitlines()
    assert "Add fetch_json()" in subjects
    assert not any(s.startswith("debug:") for s in subjects)


def test_clean_and_no_debug_code():
    assert git("status", "--porcelain", "--untracked-files=no") == ""
    src = git("show", "main:retry.py")
    assert "DEBUG" not in src and "print(" not in src


def test_jitter():
    import retry
    base = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    got = retry.backoff_delays(9)
    assert [type(x) for x in got] == [float] * 8 and got == base
    for seed in range(20):
        got = retry.backoff_delays(9, rng=random.Random(seed))
        r = random.Random(seed)
        want = [r.uniform(0, d) for d in base]
        assert [type(x) for x in got] == [float] * 8
        assert repr(got) == repr(want)


def test_retry_after_and_jitter_in_retry():
    import retry
    slept = []
    calls = iter([retry.RateLimited(retry_after=7), retry.TransientError("reset"), "ok"])

    def func():
        v = next(calls)
        if isinstance(v, Exception):
            raise v
        return v

    assert retry.retry(func, attempts=3, sleep=slept.append, rng=random.Random(3)) == "ok"
    r = random.Random(3)
    want = [r.uniform(0, 0.5), r.uniform(0, 1.0)]
    assert slept[0] == 7 and repr(slept[1]) == repr(want[1])
    assert issubclass(retry.RateLimited, retry.TransientError)
    assert retry.RateLimited(retry_after=2.5).retry_after == 2.5


def test_retry_basics_still_work():
    import retry
    slept = []
    n = {"i": 0}

    def always():
        n["i"] += 1
        raise retry.TransientError("nope")

    with pytest.raises(retry.TransientError):
        retry.retry(always, attempts=4, sleep=slept.append)
    assert n["i"] == 4 and slept == [0.5, 1.0, 2.0]
    with pytest.raises(ValueError):
        retry.retry(lambda: int("x"), attempts=3, sleep=slept.append)


def test_client_still_has_fetch_json():
    import client

    class Resp:
        def read(self):
            return b'{"a": [1, 2]}'

    assert client.fetch_json("http://x/", opener=lambda url: Resp()) == {"a": [1, 2]}
