import collections
import re

_LEVEL = re.compile(r"\b(DEBUG|INFO|WARNING|ERROR|CRITICAL)\b")


def count_levels(lines):
    """Count log levels in an iterable of log lines."""
    counts = collections.Counter()
    for line in lines:
        m = _LEVEL.search(line)
        if m:
            counts[m.group(1)] += 1
    return dict(counts)


def top_n(counts, n=3):
    """The n most frequent keys, ties broken alphabetically."""
    return [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]
