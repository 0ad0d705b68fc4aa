"""Class templates (small stateful models) for the ``mutation`` generator."""

from __future__ import annotations

import random

from ._mutation_templates import Unit, _src


def ring_buffer(rng: random.Random) -> Unit:
    name = rng.choice(["RingBuffer", "History", "RecentItems"])
    source = _src('''
        class $name:
            """First-in first-out buffer of at most ``capacity`` items; pushing onto a full buffer
            silently drops the oldest item. ValueError if capacity < 1."""

            def __init__(self, capacity):
                if capacity < 1:
                    raise ValueError("capacity must be positive")
                self._items = [None] * capacity
                self._start = 0
                self._size = 0

            def push(self, item):
                cap = len(self._items)
                self._items[(self._start + self._size) % cap] = item
                if self._size == cap:
                    self._start = (self._start + 1) % cap
                else:
                    self._size += 1

            def pop(self):
                """Remove and return the oldest item; IndexError when empty."""
                if self._size == 0:
                    raise IndexError("pop from empty buffer")
                item = self._items[self._start]
                self._start = (self._start + 1) % len(self._items)
                self._size -= 1
                return item

            def size(self):
                return self._size

            def snapshot(self):
                """Items from oldest to newest."""
                cap = len(self._items)
                return [self._items[(self._start + i) % cap] for i in range(self._size)]
        ''', name=name)
    cases: list[tuple[object, ...]] = [((0,), [])]
    for _ in range(5):
        ops: list[tuple[str, tuple[object, ...]]] = []
        for _ in range(rng.randint(4, 12)):
            r = rng.random()
            op = "push" if r < 0.55 else "pop" if r < 0.75 else rng.choice(["size", "snapshot"])
            ops.append((op, (rng.randint(1, 99),) if op == "push" else ()))
        cases.append(((rng.randint(1, 4),), ops + [("snapshot", ())]))
    return Unit("models", name, source, cases, is_class=True)


def inventory(rng: random.Random) -> Unit:
    name = rng.choice(["Inventory", "StockBook", "Warehouse"])
    source = _src('''
        class $name:
            """Stock level per SKU (a SKU whose level drops to 0 is forgotten)."""

            def __init__(self):
                self._stock = {}

            def add(self, sku, qty):
                """Add ``qty`` units and return the new level. ValueError if qty < 1."""
                if qty < 1:
                    raise ValueError("qty must be positive")
                self._stock[sku] = self._stock.get(sku, 0) + qty
                return self._stock[sku]

            def remove(self, sku, qty):
                """Remove ``qty`` units if qty >= 1 and at least qty are in stock and return True;
                otherwise change nothing and return False."""
                have = self._stock.get(sku, 0)
                if qty < 1 or have < qty:
                    return False
                if have == qty:
                    del self._stock[sku]
                else:
                    self._stock[sku] = have - qty
                return True

            def level(self, sku):
                return self._stock.get(sku, 0)

            def low_stock(self, threshold):
                """Sorted SKUs that are known and whose level is below ``threshold``."""
                return sorted(s for s, n in self._stock.items() if n < threshold)
        ''', name=name)
    cases: list[tuple[object, ...]] = []
    for _ in range(6):
        ops: list[tuple[str, tuple[object, ...]]] = []
        for _ in range(rng.randint(5, 12)):
            sku, qty = rng.choice(["A1", "B2", "C3"]), rng.randint(-1, 6)
            op = rng.choice(["add", "add", "remove", "remove", "level", "low_stock"])
            args: tuple[object, ...] = (sku, qty) if op in ("add", "remove") else (sku,)
            ops.append((op, (rng.randint(1, 6),) if op == "low_stock" else args))
        cases.append(((), ops + [("low_stock", (4,))]))
    return Unit("models", name, source, cases, is_class=True)


def rate_limiter(rng: random.Random) -> Unit:
    name = rng.choice(["RateLimiter", "Throttle", "WindowLimiter"])
    limit, window = rng.randint(2, 4), rng.randint(5, 12)
    source = _src('''
        class $name:
            """Sliding-window limiter: allow(now) accepts an event unless $limit events were
            already accepted at times t with now - $window < t <= now. Rejected events are not
            counted. Times are integers given in non-decreasing order."""

            def __init__(self):
                self._times = []

            def allow(self, now):
                self._times = [t for t in self._times if t > now - $window]
                if len(self._times) < $limit:
                    self._times.append(now)
                    return True
                return False
        ''', name=name, limit=limit, window=window)
    cases: list[tuple[object, ...]] = []
    for _ in range(6):
        now, ops = 0, []
        for _ in range(rng.randint(6, 14)):
            now += rng.choice([0, 1, 1, 2, 3, window, window - 1])
            ops.append(("allow", (now,)))
        cases.append(((), ops))
    return Unit("models", name, source, cases, is_class=True)


def account(rng: random.Random) -> Unit:
    name = rng.choice(["Account", "Wallet", "Ledger"])
    overdraft = rng.choice([0, 500, 1000, 2500])
    source = _src('''
        class $name:
            """Balance in cents; it may go down to -$overdraft (the overdraft limit), no lower."""

            def __init__(self, balance=0):
                self._balance = balance

            def deposit(self, amount):
                """Add ``amount`` > 0 and return the new balance; ValueError otherwise."""
                if amount <= 0:
                    raise ValueError("amount must be positive")
                self._balance += amount
                return self._balance

            def withdraw(self, amount):
                """Take ``amount`` out and return True if the balance stays at or above
                -$overdraft; otherwise change nothing and return False.
                ValueError if amount <= 0."""
                if amount <= 0:
                    raise ValueError("amount must be positive")
                if self._balance - amount < -$overdraft:
                    return False
                self._balance -= amount
                return True

            def balance(self):
                return self._balance
        ''', name=name, overdraft=overdraft)
    edge = [("withdraw", (100 + overdraft,)), ("balance", ())]
    cases: list[tuple[object, ...]] = [((100,), edge)]
    for _ in range(5):
        ops = [(rng.choice(["deposit", "withdraw", "withdraw"]),
                (rng.choice([0, 100, 250, 500, overdraft, 1000]),))
               for _ in range(rng.randint(3, 8))]
        cases.append(((rng.choice([0, 300, 1000]),), ops + [("balance", ())]))
    return Unit("models", name, source, cases, is_class=True)
