#!/bin/bash
set -e
cat > /app/ttlcache.py <<'PY'
"""LRU cache with per-entry time-to-live."""
import heapq
import itertools
import time
from collections import OrderedDict


class TTLCache:
    def __init__(self, maxsize, ttl, clock=time.monotonic):
        if type(maxsize) is not int or maxsize < 1:
            raise ValueError("maxsize must be an int >= 1")
        self._check_ttl(ttl)
        self._maxsize = maxsize
        self._ttl = ttl
        self._clock = clock
        self._data = OrderedDict()  # key -> (value, expires_at, serial)
        self._heap = []  # (expires_at, serial, key)
        self._serial = itertools.count()
        self._hits = self._misses = self._evictions = self._expirations = 0

    @staticmethod
    def _check_ttl(ttl):
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise ValueError("ttl must be a number > 0")

    def _purge(self):
        now = self._clock()
        heap, data = self._heap, self._data
        while heap and heap[0][0] <= now:
            expires_at, serial, key = heapq.heappop(heap)
            entry = data.get(key)
            if entry is not None and entry[2] == serial:
                del data[key]
                self._expirations += 1
        # keep the heap from growing without bound because of stale records
        if len(heap) > 2 * len(data) + 64:
            self._heap = [(e[1], e[2], k) for k, e in data.items()]
            heapq.heapify(self._heap)
        return now

    def get(self, key, default=None):
        self._purge()
        entry = self._data.get(key)
        if entry is None:
            self._misses += 1
            return default
        self._data.move_to_end(key)
        self._hits += 1
        return entry[0]

    def set(self, key, value, ttl=None):
        if ttl is not None:
            self._check_ttl(ttl)
        now = self._purge()
        expires_at = now + (self._ttl if ttl is None else ttl)
        if key in self._data:
            self._data.move_to_end(key)
        elif len(self._data) >= self._maxsize:
            self._data.popitem(last=False)
            self._evictions += 1
        serial = next(self._serial)
        self._data[key] = (value, expires_at, serial)
        heapq.heappush(self._heap, (expires_at, serial, key))

    def delete(self, key):
        self._purge()
        return self._data.pop(key, None) is not None

    def __contains__(self, key):
        self._purge()
        return key in self._data

    def __len__(self):
        self._purge()
        return len(self._data)

    def keys(self):
        self._purge()
        return list(self._data)

    def clear(self):
        self._purge()
        self._data.clear()
        self._heap = []

    def stats(self):
        self._purge()
        return {"hits": self._hits, "misses": self._misses,
                "evictions": self._evictions, "expirations": self._expirations}
PY
