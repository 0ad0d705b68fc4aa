import gc
import weakref

import pytest

import quotes
from quotes import RateTable, Quoter, memoize_method, clear_cache, cache_info


def _int(x):
    assert type(x) is int, f"expected int, got {type(x)!r}"
    return x


# ---------------- FAIL_TO_PASS ----------------

def test_instances_do_not_share_results():
    ups = RateTable("ups", {"EU": 700, "US": 300})
    dhl = RateTable("dhl", {"EU": 650, "US": 410})
    assert _int(ups.rate("EU")) == 700
    assert _int(dhl.rate("EU")) == 650
    assert _int(dhl.rate("US")) == 410
    assert _int(ups.rate("US")) == 300


def test_keyword_arguments_are_part_of_the_key():
    t = RateTable("gls", {"EU": 500})
    assert _int(t.rate("EU")) == 500
    assert _int(t.rate("EU", express=True)) == 1000
    assert _int(t.rate("EU", express=False)) == 500
    assert _int(t.rate("EU", True)) == 1000
    assert _int(t.rate("EU")) == 500


def test_clear_cache_is_per_instance():
    a = RateTable("a", {"EU": 100})
    b = RateTable("b", {"EU": 200})
    a.rate("EU"); b.rate("EU")
    assert (a.lookups, b.lookups) == (1, 1)
    a.update("EU", 150)
    assert _int(a.rate("EU")) == 150
    assert _int(b.rate("EU")) == 200
    assert (a.lookups, b.lookups) == (2, 1)


def test_clear_cache_by_name_only_touches_that_method():
    t = RateTable("t", {"EU": 100, "US": 50})
    q = Quoter(t, min_charge=0)

    class Both:
        def __init__(self):
            self.calls = 0

        @memoize_method
        def f(self, x):
            self.calls += 1
            return x * 2

        @memoize_method
        def g(self, x):
            self.calls += 1
            return x * 3

    o = Both()
    o.f(1); o.g(1); o.f(2)
    assert (_int(cache_info(o, "f")), _int(cache_info(o, "g"))) == (2, 1)
    clear_cache(o, "f")
    assert (_int(cache_info(o, "f")), _int(cache_info(o, "g"))) == (0, 1)
    o.g(1)
    assert o.calls == 3
    clear_cache(o)
    assert (_int(cache_info(o, "f")), _int(cache_info(o, "g"))) == (0, 0)
    assert _int(cache_info(q, "quote")) == 0


def test_cache_info_counts_per_instance():
    a = RateTable("a", {"EU": 1, "US": 2, "UK": 3})
    b = RateTable("b", {"EU": 1, "US": 2, "UK": 3})
    a.rate("EU"); a.rate("US"); a.rate("US"); a.rate("US", express=True)
    b.rate("UK")
    assert _int(cache_info(a, "rate")) == 3
    assert _int(cache_info(b, "rate")) == 1
    assert _int(cache_info(RateTable("c", {}), "rate")) == 0


def test_cache_does_not_keep_instances_alive():
    t = RateTable("tmp", {"EU": 1})
    q = Quoter(t)
    t.rate("EU"); q.quote("EU", 3)
    refs = [weakref.ref(t), weakref.ref(q)]
    del t, q
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_no_stale_results_after_address_reuse():
    got = []
    for i in range(300):
        t = RateTable(f"c{i}", {"EU": 1000 + i})
        got.append(t.rate("EU"))
        del t
    assert [type(x) for x in got] == [int] * 300
    assert got == [1000 + i for i in range(300)]


def test_quoters_over_different_tables():
    q1 = Quoter(RateTable("x", {"EU": 300}), min_charge=0)
    q2 = Quoter(RateTable("y", {"EU": 900}), min_charge=0)
    assert _int(q1.quote("EU", 2)) == 600
    assert _int(q2.quote("EU", 2)) == 1800
    assert _int(q2.quote("EU", 2, express=True)) == 3600
    assert _int(q1.quote("EU", 2, express=True)) == 1200


# ---------------- PASS_TO_PASS ----------------

def test_repeated_calls_hit_the_cache():
    t = RateTable("solo", {"P2P-ZONE-1": 400}, fuel_surcharge_pct=10)
    assert _int(t.rate("P2P-ZONE-1")) == 440
    assert _int(t.rate("P2P-ZONE-1")) == 440
    assert t.lookups == 1


def test_update_refreshes_value():
    t = RateTable("solo2", {"P2P-ZONE-2": 400})
    assert t.rate("P2P-ZONE-2") == 400
    t.update("P2P-ZONE-2", 420)
    assert _int(t.rate("P2P-ZONE-2")) == 420


def test_min_charge_applies():
    q = Quoter(RateTable("solo3", {"P2P-ZONE-3": 10}), min_charge=500)
    assert _int(q.quote("P2P-ZONE-3", 2)) == 500
    assert _int(q.quote("P2P-ZONE-3", 70)) == 700


def test_wraps_metadata_and_exports():
    assert RateTable.rate.__name__ == "rate"
    assert Quoter.quote.__name__ == "quote"
    assert set(quotes.__all__) == {"memoize_method", "clear_cache", "cache_info", "RateTable", "Quoter"}


def test_exceptions_are_not_cached():
    t = RateTable("solo4", {})
    with pytest.raises(KeyError):
        t.rate("P2P-MISSING")
    t._rates["P2P-MISSING"] = 5
    assert _int(t.rate("P2P-MISSING")) == 5
