import json
import random
import subprocess

import pytest

import fuzzy


def osa(a, b):
    n, m = len(a), len(b)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            c = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + c)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[n][m]


def brute(vocab, queries, k):
    v = sorted(set(vocab))
    return [[w for w in v if osa(q, w) <= k] for q in queries]


def deletes(word, k):
    out, frontier = {word}, {word}
    for _ in range(k):
        frontier = {w[:i] + w[i + 1:] for w in frontier for i in range(len(w))}
        out |= frontier
    return out


def indexed(vocab, queries, k):
    index = {}
    for w in set(vocab):
        for d in deletes(w, k):
            index.setdefault(d, []).append(w)
    res, cache = [], {}
    for q in queries:
        if q not in cache:
            c = set()
            for d in deletes(q, k):
                c.update(index.get(d, ()))
            cache[q] = sorted(w for w in c if abs(len(w) - len(q)) <= k and osa(q, w) <= k)
        res.append(cache[q])
    return res


def gen(rng, n_vocab, n_q, lo, hi, alphabet):
    vocab = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(lo, hi + 1)))
             for _ in range(n_vocab)]
    qs = []
    for _ in range(n_q):
        w = list(rng.choice(vocab))
        for _ in range(rng.randrange(0, 3)):
            op = rng.randrange(4)
            if op == 0 and w:
                del w[rng.randrange(len(w))]
            elif op == 1:
                w.insert(rng.randrange(len(w) + 1), rng.choice(alphabet))
            elif op == 2 and w:
                w[rng.randrange(len(w))] = rng.choice(alphabet)
            elif op == 3 and len(w) > 1:
                i = rng.randrange(len(w) - 1)
                w[i], w[i + 1] = w[i + 1], w[i]
        qs.append("".join(w))
    return vocab, qs


def canon(res):
    assert type(res) is list
    out = []
    for row in res:
        assert type(row) is list
        assert all(type(w) is str for w in row)
        out.append([str(w) for w in row])
    return json.dumps(out)


@pytest.mark.parametrize("k", [0, 1, 2])
@pytest.mark.parametrize("seed", [11, 12])
def test_small_against_bruteforce(k, seed):
    rng = random.Random(seed * 10 + k)
    for _ in range(60):
        alphabet = rng.choice(["ab", "abc", "xyz\u00e9", "\u043f\u0440\u0438", "abcdefgh"])
        vocab, qs = gen(rng, rng.randrange(1, 50), 15, 0, 6, alphabet)
        assert canon(fuzzy.near_matches(list(vocab), list(qs), k)) == json.dumps(brute(vocab, qs, k))


def test_special_cases():
    vocab = ["", "a", "ab", "ba", "abc", "ca", "ab"]
    qs = ["", "ab", "ab", "ca", "acb", "caf\u00e9"]
    assert canon(fuzzy.near_matches(iter(vocab), qs, 1)) == json.dumps(brute(vocab, qs, 1))
    assert canon(fuzzy.near_matches(tuple(vocab), qs, 2)) == json.dumps(brute(vocab, qs, 2))
    assert canon(fuzzy.near_matches(vocab, [], 1)) == "[]"
    # default max_dist is 1
    assert canon(fuzzy.near_matches(["kitten", "sitten", "sittin"], ["kitten"])) == '[["kitten", "sitten"]]'


def test_osa_distance_kept():
    cases = [("ca", "abc", 3), ("abcd", "acbd", 1), ("", "abc", 3), ("kitten", "sitting", 3),
             ("\u00e9t\u00e9", "t\u00e9\u00e9", 1), ("same", "same", 0)]
    for a, b, d in cases:
        got = fuzzy.osa_distance(a, b)
        assert type(got) is int and got == d, (a, b, got)


RUNNER = r"""
import json, sys
sys.path.append('/app')
import fuzzy
vocab, qs, k = json.load(open(sys.argv[1]))
res = fuzzy.near_matches(vocab, qs, k)
assert type(res) is list
out = []
for row in res:
    assert type(row) is list and all(type(w) is str for w in row)
    out.append([str(w) for w in row])
json.dump(out, open(sys.argv[2], 'w'))
"""

ALPHA = "abcdefghijklmnopqrstuvwxyz" + "\u00e9\u00fc\u00f8"


@pytest.mark.parametrize("k,n_vocab,n_q,hi,seed", [(1, 50_000, 5_000, 14, 3), (2, 20_000, 2_000, 12, 4)])
def test_large_batch_fast(tmp_path, k, n_vocab, n_q, hi, seed):
    rng = random.Random(seed)
    vocab, qs = gen(rng, n_vocab, n_q, 3, hi, ALPHA)
    inp = tmp_path / "in.json"
    inp.write_text(json.dumps([vocab, qs, k]))
    outp = tmp_path / "out.json"
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    try:
        p = subprocess.run(["/usr/bin/python3", "-I", str(runner), str(inp), str(outp)],
                           capture_output=True, text=True, timeout=20, cwd=str(tmp_path))
    except subprocess.TimeoutExpired:
        pytest.fail("near_matches took more than 20 s (max_dist=%d)" % k)
    assert p.returncode == 0, p.stderr[-2000:]
    assert outp.read_text() == json.dumps(indexed(vocab, qs, k))
