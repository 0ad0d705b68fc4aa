"""LRU cache with per-entry time-to-live. See the ticket for the full specification."""
import time


class TTLCache:
    def __init__(self, maxsize, ttl, clock=time.monotonic):
        raise NotImplementedError

    def get(self, key, default=None):
        raise NotImplementedError

    def set(self, key, value, ttl=None):
        raise NotImplementedError

    def delete(self, key):
        raise NotImplementedError

    def __contains__(self, key):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def keys(self):
        raise NotImplementedError

    def clear(self):
        raise NotImplementedError

    def stats(self):
        raise NotImplementedError
