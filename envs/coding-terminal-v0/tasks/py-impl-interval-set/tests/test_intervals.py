import random
import time

import pytest

from intervals import IntervalSet


def to_pairs(points):
    out = []
    for x in sorted(points):
        if out and out[-1][1] == x:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1])
    return [tuple(p) for p in out]


def strict(s):
    iv = s.intervals()
    assert type(iv) is list
    for p in iv:
        assert type(p) is tuple and len(p) == 2 and type(p[0]) is int and type(p[1]) is int
    return iv


def same(s, points):
    assert type(s) is IntervalSet
    assert repr(strict(s)) == repr(to_pairs(points))


def rand_pairs(rng, k, lo=-40, hi=40):
    out = []
    for _ in range(k):
        a = rng.randint(lo, hi)
        out.append((a, a + rng.randint(0, 12)))
    return out


def points_of(pairs):
    return {x for a, b in pairs for x in range(a, b)}


# ---------------- construction & normalisation ----------------

def test_merge_touching_and_overlapping():
    s = IntervalSet([(5, 7), (1, 3), (3, 4), (6, 9), (10, 10), (12, 13)])
    assert repr(strict(s)) == repr([(1, 4), (5, 9), (12, 13)])
    assert repr(s) == "IntervalSet([(1, 4), (5, 9), (12, 13)])"
    assert repr(IntervalSet()) == "IntervalSet([])"
    assert len(s) == 3 and s.measure() == 8 and type(s.measure()) is int
    assert list(s) == [(1, 4), (5, 9), (12, 13)]
    assert bool(s) is True and bool(IntervalSet([(3, 3)])) is False


@pytest.mark.parametrize("bad,exc", [([(3, 1)], ValueError), ([(1.0, 2)], TypeError), ([(1, "2")], TypeError),
                                     ([(True, 3)], TypeError), ([(0, False)], TypeError)])
def test_validation(bad, exc):
    with pytest.raises(exc):
        IntervalSet(bad)
    s = IntervalSet([(0, 1)])
    with pytest.raises(exc):
        s.add(*bad[0])
    with pytest.raises(exc):
        s.remove(*bad[0])
    assert repr(strict(s)) == "[(0, 1)]"


def test_operators_reject_other_types():
    s = IntervalSet([(0, 5)])
    for other in ([(0, 1)], {1, 2}, 3, None):
        for op in ("__or__", "__and__", "__sub__", "__xor__"):
            with pytest.raises(TypeError):
                eval(f"s {dict(__or__='|', __and__='&', __sub__='-', __xor__='^')[op]} other")
    assert (s == [(0, 5)]) is False
    with pytest.raises(TypeError):
        hash(s)


def test_operands_unchanged_and_results_independent():
    a = IntervalSet([(0, 10)])
    b = IntervalSet([(5, 15)])
    u = a | b
    u.add(20, 30)
    d = a - b
    d.remove(0, 1)
    assert repr(a) == "IntervalSet([(0, 10)])" and repr(b) == "IntervalSet([(5, 15)])"
    iv = a.intervals()
    iv.append((99, 100))
    assert repr(a) == "IntervalSet([(0, 10)])"


def test_examples():
    busy = IntervalSet([(9, 12), (13, 17)])
    assert repr(busy.gaps(8, 18)) == "IntervalSet([(8, 9), (12, 13), (17, 18)])"
    assert busy.overlaps(12, 13) is False and busy.overlaps(11, 13) is True and busy.overlaps(12, 12) is False
    assert (12 in busy) is False and (16 in busy) is True and (17 in busy) is False
    assert repr(busy ^ IntervalSet([(10, 14)])) == "IntervalSet([(9, 10), (12, 13), (14, 17)])"
    assert (busy == IntervalSet([(13, 17), (9, 10), (10, 12)])) is True
    assert (busy != IntervalSet([(9, 17)])) is True


# ---------------- randomized against a set-of-ints model ----------------

@pytest.mark.parametrize("seed", range(10))
def test_algebra_matches_model(seed):
    rng = random.Random(seed)
    for _ in range(60):
        pa, pb = rand_pairs(rng, rng.randint(0, 8)), rand_pairs(rng, rng.randint(0, 8))
        A, B = points_of(pa), points_of(pb)
        a, b = IntervalSet(pa), IntervalSet(pb)
        same(a, A)
        same(a | b, A | B)
        same(a & b, A & B)
        same(a - b, A - B)
        same(b - a, B - A)
        same(a ^ b, A ^ B)
        assert (a == b) is (A == B)
        lo, hi = sorted(rng.sample(range(-50, 60), 2))
        same(a.gaps(lo, hi), set(range(lo, hi)) - A)
        assert a.measure() == len(A) and len(a) == len(to_pairs(A))
        for x in range(-45, 55, 3):
            assert (x in a) is (x in A)
        for _ in range(10):
            s = rng.randint(-45, 50)
            e = s + rng.randint(0, 6)
            assert a.overlaps(s, e) is bool(A & set(range(s, e)))


@pytest.mark.parametrize("seed", range(6))
def test_in_place_edits_match_model(seed):
    rng = random.Random(1000 + seed)
    s = IntervalSet()
    model = set()
    for step in range(400):
        a = rng.randint(-60, 60)
        b = a + rng.randint(0, 15)
        if rng.random() < 0.55:
            s.add(a, b)
            model |= set(range(a, b))
        else:
            s.remove(a, b)
            model -= set(range(a, b))
        same(s, model)


# ---------------- scale ----------------

def test_large_sets_are_fast():
    rng = random.Random(5)
    n = 100000
    pa = [(i * 10, i * 10 + rng.randint(1, 9)) for i in range(n)]
    pb = [(i * 10 + 5, i * 10 + 5 + rng.randint(1, 9)) for i in range(n)]
    t0 = time.process_time()
    a, b = IntervalSet(pa), IntervalSet(pb)
    u, i, d, x = a | b, a & b, a - b, a ^ b
    hits = sum(1 for q in range(0, 10 * n, 7) if q in a)
    ov = sum(1 for q in range(0, 10 * n, 13) if a.overlaps(q, q + 2))
    for k in range(2000):
        a.add(k * 500 + 3, k * 500 + 4)
    elapsed = time.process_time() - t0
    A_hits = sum(1 for q in range(0, 10 * n, 7) if (q % 10) < pa[q // 10][1] - pa[q // 10][0])
    assert hits == A_hits
    assert u.measure() + i.measure() == sum(e - s for s, e in pa) + sum(e - s for s, e in pb)
    assert d.measure() + i.measure() == sum(e - s for s, e in pa)
    assert x.measure() == u.measure() - i.measure()
    assert ov > 0
    assert elapsed < 20, f"too slow: {elapsed:.1f}s of CPU"
