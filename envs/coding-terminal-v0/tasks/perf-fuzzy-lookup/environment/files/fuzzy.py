"""'Did you mean ...?' lookup for the support-ticket search box.

Distance is the optimal-string-alignment distance (Levenshtein plus swaps of
two adjacent characters, no substring edited twice).
"""


def osa_distance(a, b):
    n, m = len(a), len(b)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[n][m]


def near_matches(vocabulary, queries, max_dist=1):
    """For every query (in order) return the sorted list of distinct
    vocabulary words whose OSA distance to the query is <= max_dist."""
    vocab = sorted(set(vocabulary))
    result = []
    for q in queries:
        result.append([w for w in vocab if osa_distance(q, w) <= max_dist])
    return result
