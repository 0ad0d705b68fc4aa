#!/bin/bash
set -e
cat > /app/segment.py <<'PY'
"""Compound-token splitter used by the search indexer (dynamic programming)."""

MOD = 1_000_000_007


def _prep(words):
    vocab = set(words)
    lengths = sorted({len(w) for w in vocab})
    return vocab, lengths


def count_segmentations(text, words):
    vocab, lengths = _prep(words)
    n = len(text)
    ways = [0] * (n + 1)
    ways[n] = 1
    for i in range(n - 1, -1, -1):
        total = 0
        for L in lengths:
            j = i + L
            if j > n:
                break
            if ways[j] and text[i:j] in vocab:
                total += ways[j]
        ways[i] = total % MOD
    return ways[0]


def _fewest_table(text, words):
    vocab, lengths = _prep(words)
    n = len(text)
    INF = n + 1
    cnt = [INF] * (n + 1)
    nxt = [None] * (n + 1)
    cnt[n] = 0
    for i in range(n - 1, -1, -1):
        best_c, best_w = INF, None
        for L in lengths:
            j = i + L
            if j > n:
                break
            if cnt[j] < INF:
                w = text[i:j]
                if w in vocab:
                    c = cnt[j] + 1
                    if c < best_c or (c == best_c and w < best_w):
                        best_c, best_w = c, w
        cnt[i] = best_c
        nxt[i] = best_w
    return cnt, nxt, INF


def fewest_words(text, words):
    cnt, _, INF = _fewest_table(text, words)
    return cnt[0] if cnt[0] < INF else -1


def split_fewest(text, words):
    cnt, nxt, INF = _fewest_table(text, words)
    if cnt[0] >= INF:
        return None
    out = []
    i = 0
    while i < len(text):
        w = nxt[i]
        out.append(w)
        i += len(w)
    return out
PY
