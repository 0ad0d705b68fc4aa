#!/bin/bash
set -e
cat > /app/intervals.py <<'PY'
"""Sets of integers stored as sorted, disjoint half-open intervals."""
from bisect import bisect_left, bisect_right


def _check(start, end):
    if type(start) is not int or type(end) is not int:
        raise TypeError("interval bounds must be int")
    if start > end:
        raise ValueError("start > end")


def _normalise(pairs):
    pairs = sorted(p for p in pairs if p[0] < p[1])
    out = []
    for s, e in pairs:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


class IntervalSet:
    __hash__ = None

    def __init__(self, intervals=()):
        pairs = []
        for pair in intervals:
            start, end = pair
            _check(start, end)
            pairs.append((start, end))
        self._set(_normalise(pairs))

    def _set(self, merged):
        self._starts = [s for s, _ in merged]
        self._ends = [e for _, e in merged]

    @classmethod
    def _from_lists(cls, starts, ends):
        obj = cls.__new__(cls)
        obj._starts, obj._ends = starts, ends
        return obj

    def intervals(self):
        return list(zip(self._starts, self._ends))

    def __iter__(self):
        return iter(self.intervals())

    def __len__(self):
        return len(self._starts)

    def __bool__(self):
        return bool(self._starts)

    def measure(self):
        return sum(self._ends) - sum(self._starts)

    def __contains__(self, x):
        if type(x) is not int:
            return False
        i = bisect_right(self._starts, x) - 1
        return i >= 0 and x < self._ends[i]

    def overlaps(self, start, end):
        _check(start, end)
        if start == end:
            return False
        i = bisect_right(self._starts, start) - 1
        if i >= 0 and self._ends[i] > start:
            return True
        j = i + 1
        return j < len(self._starts) and self._starts[j] < end

    def add(self, start, end):
        _check(start, end)
        if start == end:
            return
        # intervals touching or overlapping [start, end)
        lo = bisect_left(self._ends, start)
        hi = bisect_right(self._starts, end)
        if lo < hi:
            start = min(start, self._starts[lo])
            end = max(end, self._ends[hi - 1])
        self._starts[lo:hi] = [start]
        self._ends[lo:hi] = [end]

    def remove(self, start, end):
        _check(start, end)
        if start == end:
            return
        lo = bisect_right(self._ends, start)
        hi = bisect_left(self._starts, end)
        if lo >= hi:
            return
        new_s, new_e = [], []
        if self._starts[lo] < start:
            new_s.append(self._starts[lo]); new_e.append(start)
        if self._ends[hi - 1] > end:
            new_s.append(end); new_e.append(self._ends[hi - 1])
        self._starts[lo:hi] = new_s
        self._ends[lo:hi] = new_e

    # --- set algebra via a sweep over boundary events ---
    def _combine(self, other, keep):
        if not isinstance(other, IntervalSet):
            return NotImplemented
        events = []
        for s, e in zip(self._starts, self._ends):
            events.append((s, 0, 1)); events.append((e, 0, -1))
        for s, e in zip(other._starts, other._ends):
            events.append((s, 1, 1)); events.append((e, 1, -1))
        events.sort()
        count = [0, 0]
        starts, ends = [], []
        inside = False
        i, n = 0, len(events)
        while i < n:
            x = events[i][0]
            while i < n and events[i][0] == x:
                count[events[i][1]] += events[i][2]
                i += 1
            now = keep(count[0] > 0, count[1] > 0)
            if now and not inside:
                starts.append(x)
            elif inside and not now:
                ends.append(x)
            inside = now
        return IntervalSet._from_lists(starts, ends)

    def __or__(self, other):
        return self._combine(other, lambda a, b: a or b)

    def __and__(self, other):
        return self._combine(other, lambda a, b: a and b)

    def __sub__(self, other):
        return self._combine(other, lambda a, b: a and not b)

    def __xor__(self, other):
        return self._combine(other, lambda a, b: a != b)

    def gaps(self, lo, hi):
        _check(lo, hi)
        return IntervalSet([(lo, hi)]) - self

    def __eq__(self, other):
        if not isinstance(other, IntervalSet):
            return NotImplemented
        return self._starts == other._starts and self._ends == other._ends

    def __repr__(self):
        return f"IntervalSet({self.intervals()!r})"
PY
