import json
import random
import subprocess

import pytest

import segment

MOD = 1_000_000_007


def brute(text, words):
    vocab = set(words)
    segs = []

    def rec(i, acc):
        if i == len(text):
            segs.append(list(acc))
            return
        for j in range(i + 1, len(text) + 1):
            if text[i:j] in vocab:
                acc.append(text[i:j])
                rec(j, acc)
                acc.pop()
    rec(0, [])
    if not segs:
        return 0, -1, None
    best = min(segs, key=lambda s: (len(s), s))
    return len(segs) % MOD, len(best), best


def ref_dp(text, words):
    vocab = set(words)
    lengths = sorted({len(w) for w in vocab})
    n = len(text)
    ways = [0] * (n + 1)
    ways[n] = 1
    INF = n + 1
    cnt = [INF] * (n + 1)
    cnt[n] = 0
    nxt = [None] * (n + 1)
    for i in range(n - 1, -1, -1):
        for L in lengths:
            j = i + L
            if j > n:
                break
            w = text[i:j]
            if w in vocab:
                ways[i] = (ways[i] + ways[j]) % MOD
                if cnt[j] < INF:
                    c = cnt[j] + 1
                    if c < cnt[i] or (c == cnt[i] and w < nxt[i]):
                        cnt[i], nxt[i] = c, w
    if cnt[0] >= INF:
        return ways[0], -1, None
    out, i = [], 0
    while i < n:
        out.append(nxt[i])
        i += len(nxt[i])
    return ways[0], cnt[0], out


def check_types(c, f, s):
    assert type(c) is int and type(f) is int
    assert s is None or (type(s) is list and all(type(w) is str for w in s))
    return (int(c), int(f), None if s is None else [str(w) for w in s])


def small_case(rng):
    alphabet = rng.choice(["ab", "abc", "a", "xyz"])
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 5)))
             for _ in range(rng.randrange(1, 12))]
    words += rng.sample(words, min(2, len(words)))  # duplicates
    if rng.random() < 0.5:
        text = "".join(rng.choice(words) for _ in range(rng.randrange(0, 6)))
    else:
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
    return text, words


@pytest.mark.parametrize("seed", range(6))
def test_small_against_brute_force(seed):
    rng = random.Random(seed * 7919)
    for _ in range(40):
        text, words = small_case(rng)
        exp = brute(text, words)
        got = check_types(segment.count_segmentations(text, list(words)),
                          segment.fewest_words(text, tuple(words)),
                          segment.split_fewest(text, iter(words)))
        assert json.dumps(got) == json.dumps(list(exp)), (text, words)


def test_edge_cases():
    assert check_types(segment.count_segmentations("", ["a"]), segment.fewest_words("", ["a"]),
                       segment.split_fewest("", ["a"])) == (1, 0, [])
    assert check_types(segment.count_segmentations("abc", ["ab", "x"]),
                       segment.fewest_words("abc", ["ab", "x"]),
                       segment.split_fewest("abc", ["ab", "x"])) == (0, -1, None)
    words = ["ab", "a", "bc", "c", "abc"]
    assert segment.split_fewest("abcabc", words) == ["abc", "abc"]
    assert segment.split_fewest("abab", ["a", "b", "ab", "aba"]) == ["ab", "ab"]
    # tie on count: ['aab','c'] vs ['aa','bc'] -> 'aa' < 'aab'
    assert segment.split_fewest("aabc", ["aab", "c", "aa", "bc"]) == ["aa", "bc"]


RUNNER = r"""
import json, sys
sys.path.append('/app')
import segment
cases = json.load(open(sys.argv[1]))
out = []
for text, words in cases:
    c = segment.count_segmentations(text, words)
    f = segment.fewest_words(text, words)
    s = segment.split_fewest(text, words)
    assert type(c) is int and type(f) is int
    assert s is None or (type(s) is list and all(type(w) is str for w in s))
    out.append([int(c), int(f), None if s is None else [str(w) for w in s]])
json.dump(out, open(sys.argv[2], 'w'))
"""


def big_cases(rng):
    cases = []
    # highly ambiguous: runs of a single letter
    cases.append(("a" * 50_000, ["a" * k for k in range(1, 17)]))
    # realistic dictionary glued text
    letters = "etaoinshrdlu"
    vocab = list({"".join(rng.choice(letters) for _ in range(rng.randrange(1, 17)))
                  for _ in range(20_000)})
    text = "".join(rng.choice(vocab) for _ in range(8_000))[:50_000]
    cases.append((text, vocab))
    # unsplittable at the very end
    cases.append(("ab" * 20_000 + "c", ["a", "b", "ab", "ba", "aba", "bab"]))
    small = ["a", "b", "ab", "ba", "bb", "aab", "abb", "bba"]
    cases.append(("".join(rng.choice("ab") for _ in range(50_000)), small))
    return cases


@pytest.mark.parametrize("seed", [1, 2])
def test_large_inputs_fast(tmp_path, seed):
    rng = random.Random(seed)
    cases = big_cases(rng)
    inp = tmp_path / "cases.json"
    inp.write_text(json.dumps(cases))
    outp = tmp_path / "out.json"
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    try:
        p = subprocess.run(["/usr/bin/python3", "-I", str(runner), str(inp), str(outp)],
                           capture_output=True, text=True, timeout=40, cwd=str(tmp_path))
    except subprocess.TimeoutExpired:
        pytest.fail("segment functions took more than 40 s on 4 large inputs")
    assert p.returncode == 0, p.stderr[-2000:]
    assert outp.read_text() == json.dumps([list(ref_dp(t, w)) for t, w in cases])
