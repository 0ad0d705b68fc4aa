#!/bin/bash
set -e
cd /app
python3 - <<'PY'
src = open("fuzzy.py").read()
start = src.index("def near_matches(")
new = '''def _deletes(word, k):
    """All strings obtained from word by deleting at most k characters."""
    out = {word}
    frontier = {word}
    for _ in range(k):
        nxt = set()
        for w in frontier:
            for i in range(len(w)):
                nxt.add(w[:i] + w[i + 1:])
        out |= nxt
        frontier = nxt
    return out


def _within(a, b, k):
    """osa_distance(a, b) <= k, with cheap exits."""
    if abs(len(a) - len(b)) > k:
        return False
    if a == b:
        return True
    if k == 0:
        return False
    # strip common prefix and suffix: does not change the OSA distance
    i = 0
    n, m = len(a), len(b)
    while i < n and i < m and a[i] == b[i]:
        i += 1
    j = 0
    while j < n - i and j < m - i and a[n - 1 - j] == b[m - 1 - j]:
        j += 1
    return osa_distance(a[i:n - j], b[i:m - j]) <= k


def near_matches(vocabulary, queries, max_dist=1):
    """For every query (in order) return the sorted list of distinct
    vocabulary words whose OSA distance to the query is <= max_dist."""
    k = max_dist
    vocab = set(vocabulary)
    index = {}
    for w in vocab:
        for d in _deletes(w, k):
            bucket = index.get(d)
            if bucket is None:
                index[d] = [w]
            else:
                bucket.append(w)
    cache = {}
    result = []
    for q in queries:
        hit = cache.get(q)
        if hit is None:
            cands = set()
            for d in _deletes(q, k):
                bucket = index.get(d)
                if bucket:
                    cands.update(bucket)
            hit = sorted(w for w in cands if _within(q, w, k))
            cache[q] = hit
        result.append(list(hit))
    return result
'''
open("fuzzy.py", "w").write(src[:start] + new)
PY
