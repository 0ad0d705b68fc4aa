import json
import random
import time

import pytest

from ttlcache import TTLCache


class Clock:
    def __init__(self, t=1000.0):
        self.t = t
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.t


class RefCache:
    """Straightforward O(n) model of the specification."""

    def __init__(self, maxsize, ttl, clock):
        self.maxsize, self.ttl, self.clock = maxsize, ttl, clock
        self.items = []  # [key, value, expires_at], LRU first
        self.st = {"hits": 0, "misses": 0, "evictions": 0, "expirations": 0}

    def purge(self):
        now = self.clock()
        keep = [e for e in self.items if now < e[2]]
        self.st["expirations"] += len(self.items) - len(keep)
        self.items = keep
        return now

    def find(self, key):
        for i, e in enumerate(self.items):
            if e[0] == key:
                return i
        return None

    def get(self, key, default=None):
        self.purge()
        i = self.find(key)
        if i is None:
            self.st["misses"] += 1
            return default
        e = self.items.pop(i)
        self.items.append(e)
        self.st["hits"] += 1
        return e[1]

    def set(self, key, value, ttl=None):
        now = self.purge()
        exp = now + (self.ttl if ttl is None else ttl)
        i = self.find(key)
        if i is not None:
            self.items.pop(i)
        elif len(self.items) >= self.maxsize:
            self.items.pop(0)
            self.st["evictions"] += 1
        self.items.append([key, value, exp])

    def delete(self, key):
        self.purge()
        i = self.find(key)
        if i is None:
            return False
        self.items.pop(i)
        return True

    def contains(self, key):
        self.purge()
        return self.find(key) is not None

    def length(self):
        self.purge()
        return len(self.items)

    def keys(self):
        self.purge()
        return [e[0] for e in self.items]

    def clear(self):
        self.purge()
        self.items = []

    def stats(self):
        self.purge()
        return dict(self.st)


def check_stats(s, expected):
    assert type(s) is dict
    assert sorted(s) == ["evictions", "expirations", "hits", "misses"]
    assert all(type(v) is int for v in s.values())
    assert json.dumps(s, sort_keys=True) == json.dumps(expected, sort_keys=True)


# ---------------- basic behaviour ----------------

def test_basic_get_set_and_identity():
    clock = Clock()
    c = TTLCache(3, 10, clock=clock)
    v = object()
    c.set("a", v)
    assert c.get("a") is v
    sentinel = object()
    assert c.get("zz", sentinel) is sentinel
    assert c.get("zz") is None
    check_stats(c.stats(), {"hits": 1, "misses": 2, "evictions": 0, "expirations": 0})


def test_expiry_boundary_is_inclusive():
    clock = Clock(0.0)
    c = TTLCache(5, 10, clock=clock)
    c.set("k", 1)
    clock.t = 9.999
    assert ("k" in c) is True
    clock.t = 10.0
    assert ("k" in c) is False
    assert len(c) == 0 and type(len(c)) is int
    check_stats(c.stats(), {"hits": 0, "misses": 0, "evictions": 0, "expirations": 1})


def test_get_does_not_extend_expiry_but_refreshes_recency():
    clock = Clock(0)
    c = TTLCache(2, 10, clock=clock)
    c.set("a", 1)
    clock.t = 5
    c.set("b", 2)
    assert c.get("a") == 1
    assert c.keys() == ["b", "a"]
    c.set("c", 3)  # evicts LRU "b", not "a"
    assert repr(c.keys()) == repr(["a", "c"])
    clock.t = 10
    assert repr(c.keys()) == repr(["c"])
    check_stats(c.stats(), {"hits": 1, "misses": 0, "evictions": 1, "expirations": 1})


def test_expired_entries_are_purged_before_eviction():
    clock = Clock(0)
    c = TTLCache(2, 100, clock=clock)
    c.set("short", 1, ttl=1)
    c.set("long", 2)
    clock.t = 1
    c.set("new", 3)
    assert repr(c.keys()) == repr(["long", "new"])
    check_stats(c.stats(), {"hits": 0, "misses": 0, "evictions": 0, "expirations": 1})


def test_replace_updates_expiry_and_recency():
    clock = Clock(0)
    c = TTLCache(2, 10, clock=clock)
    c.set("a", 1)
    c.set("b", 2)
    clock.t = 8
    c.set("a", 11)
    assert repr(c.keys()) == repr(["b", "a"])
    clock.t = 12
    assert repr(c.keys()) == repr(["a"])
    assert c.get("a") == 11
    clock.t = 18
    assert c.get("a") is None
    check_stats(c.stats(), {"hits": 1, "misses": 1, "evictions": 0, "expirations": 2})


def test_delete_clear_contains():
    clock = Clock(0)
    c = TTLCache(4, 10, clock=clock)
    for k in "abcd":
        c.set(k, k.upper())
    assert c.delete("b") is True
    assert c.delete("b") is False
    assert ("a" in c) is True and ("b" in c) is False
    assert repr(c.keys()) == repr(["a", "c", "d"])  # contains does not change recency
    clock.t = 10
    assert c.delete("a") is False
    c.set("x", 1)
    c.clear()
    assert c.keys() == [] and len(c) == 0
    c.set("y", 2)
    check_stats(c.stats(), {"hits": 0, "misses": 0, "evictions": 0, "expirations": 3})


@pytest.mark.parametrize("args", [(0, 1), (-1, 1), (1.5, 1), ("3", 1), (True, 1), (1, 0), (1, -2), (1, "5")])
def test_constructor_validation(args):
    with pytest.raises(ValueError):
        TTLCache(*args, clock=Clock())


def test_bad_per_entry_ttl():
    c = TTLCache(2, 5, clock=Clock())
    c.set("a", 1)
    for bad in (0, -1):
        with pytest.raises(ValueError):
            c.set("b", 2, ttl=bad)
    assert repr(c.keys()) == repr(["a"])


def test_stats_returns_a_copy():
    c = TTLCache(2, 5, clock=Clock())
    s = c.stats()
    s["hits"] = 99
    check_stats(c.stats(), {"hits": 0, "misses": 0, "evictions": 0, "expirations": 0})


# ---------------- randomized comparison with the model ----------------

@pytest.mark.parametrize("seed", range(8))
def test_matches_reference_model(seed):
    rng = random.Random(seed)
    clock = Clock(rng.choice([0, 1000]))
    maxsize = rng.randint(1, 8)
    ttl = rng.choice([1, 3, 7, 20])
    c = TTLCache(maxsize, ttl, clock=clock)
    r = RefCache(maxsize, ttl, clock)
    values = {}
    for step in range(1500):
        key = rng.randrange(12)
        op = rng.random()
        if rng.random() < 0.3:
            clock.t += rng.choice([0, 0.5, 1, 1, 2, 5])
        if op < 0.35:
            v = values.setdefault((key, step % 7), object())
            t = rng.choice([None, None, 1, 2, 0.5, 10])
            c.set(key, v, ttl=t)
            r.set(key, v, ttl=t)
        elif op < 0.7:
            assert c.get(key) is r.get(key), step
        elif op < 0.78:
            assert c.delete(key) is r.delete(key), step
        elif op < 0.86:
            assert (key in c) is r.contains(key), step
        elif op < 0.92:
            n = len(c)
            assert type(n) is int and n == r.length(), step
        elif op < 0.93:
            c.clear()
            r.clear()
        else:
            assert repr(c.keys()) == repr(r.keys()), step
        if step % 50 == 0:
            check_stats(c.stats(), r.stats())
    check_stats(c.stats(), r.stats())
    assert repr(c.keys()) == repr(r.keys())


# ---------------- scale ----------------

def test_scales_to_many_entries():
    rng = random.Random(42)
    clock = Clock(0)
    n = 10000
    c = TTLCache(n, 500, clock=clock)
    t0 = time.process_time()
    live = 0
    for i in range(120000):
        clock.t = i / 100
        k = rng.randrange(3 * n)
        if i % 3:
            c.set(k, i, ttl=rng.choice([None, 50, 200]))
        else:
            c.get(k)
        if i % 1000 == 0:
            live = len(c)
    elapsed = time.process_time() - t0
    s = c.stats()
    assert live <= n and s["hits"] + s["misses"] == 40000
    assert elapsed < 15, f"too slow: {elapsed:.1f}s of CPU"
