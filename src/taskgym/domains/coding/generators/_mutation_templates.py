"""Library of function/class templates for the ``mutation`` generator.

Every template takes an rng and returns a ``Unit``: the source of one function or class (names and
constants randomised), and its test inputs. The docstrings state the intended behaviour exactly,
because the agent repairing the mutated copy has nothing else to go by.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

from ._common import dedent


@dataclass(frozen=True)
class Unit:
    category: str  # text | numbers | sequences | models
    name: str
    source: str
    cases: list[tuple[object, ...]]  # function: args tuples; class: (ctor_args, ops) pairs
    is_class: bool = False


def _src(text: str, **subs: object) -> str:
    return string.Template(dedent(text)).substitute({k: str(v) for k, v in subs.items()})


WORDS = ["Alpha", "beta", "Release", "notes", "v2", "2024", "DATA", "hello", "World", "io",
         "Q3", "report", "final", "draft", "x", "Ready", "set", "go", "cafe", "Zeta"]
PUNCT = [" ", "  ", "-", "_", ", ", "!", " / ", "... ", "."]


def _phrase(rng: random.Random, lo: int = 1, hi: int = 6) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    out = rng.choice(["", " ", "--"])
    for w in words:
        out += w + rng.choice(PUNCT)
    return out


def _ints(rng: random.Random, n: int, lo: int = -9, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


def slug(rng: random.Random) -> Unit:
    name = rng.choice(["slugify", "make_slug", "to_slug"])
    sep, maxlen = rng.choice(["-", "_"]), rng.randint(12, 24)
    source = _src('''
        def $name(text):
            """Return a URL slug for ``text``.

            Runs of ASCII letters and digits are lower-cased and joined with '$sep'; every other
            character separates runs. The slug is cut to at most $maxlen characters, and a '$sep'
            left at the end by the cut is removed.
            """
            parts = []
            current = ""
            for ch in text:
                if ch.isascii() and ch.isalnum():
                    current += ch.lower()
                elif current:
                    parts.append(current)
                    current = ""
            if current:
                parts.append(current)
            slug = "$sep".join(parts)
            if len(slug) > $maxlen:
                slug = slug[:$maxlen].rstrip("$sep")
            return slug
        ''', name=name, sep=sep, maxlen=maxlen)
    cases: list[tuple[object, ...]] = [("",), ("a" * maxlen,), ("b" * (maxlen + 1),),
                                       ("x" * (maxlen - 1) + " yz",)]
    cases += [(_phrase(rng),) for _ in range(6)]
    return Unit("text", name, source, cases)


def caesar(rng: random.Random) -> Unit:
    name = rng.choice(["shift_letters", "rotate_text", "caesar"])
    source = _src('''
        def $name(text, shift):
            """Shift every ASCII letter ``shift`` places through the alphabet (wrapping around,
            keeping its case); any other character is kept as is. ``shift`` may be negative."""
            out = []
            for ch in text:
                if "a" <= ch <= "z":
                    out.append(chr((ord(ch) - ord("a") + shift) % 26 + ord("a")))
                elif "A" <= ch <= "Z":
                    out.append(chr((ord(ch) - ord("A") + shift) % 26 + ord("A")))
                else:
                    out.append(ch)
            return "".join(out)
        ''', name=name)
    cases: list[tuple[object, ...]] = [("Zebra-zoo!", 1), ("abc", -1), ("", 5), ("Az", 26)]
    cases += [(_phrase(rng), rng.randint(-30, 30)) for _ in range(5)]
    return Unit("text", name, source, cases)


def palindrome(rng: random.Random) -> Unit:
    name = rng.choice(["is_palindrome", "reads_same_backwards", "palindromic"])
    minlen = rng.randint(2, 3)
    source = _src('''
        def $name(text):
            """True if the letters and digits of ``text`` read the same in both directions,
            ignoring case and every other character. Texts with fewer than $minlen letters and
            digits are never palindromes."""
            chars = [c.lower() for c in text if c.isalnum()]
            if len(chars) < $minlen:
                return False
            i, j = 0, len(chars) - 1
            while i < j:
                if chars[i] != chars[j]:
                    return False
                i += 1
                j -= 1
            return True
        ''', name=name, minlen=minlen)
    cases: list[tuple[object, ...]] = [("A man, a plan, a canal: Panama",), ("ab",), ("aa",),
                                       ("a",), ("Never odd or even",), ("abca",), ("abcba",)]
    cases += [("".join(rng.choice("abAB ,") for _ in range(rng.randint(1, 7))),) for _ in range(4)]
    return Unit("text", name, source, cases)


def duration(rng: random.Random) -> Unit:
    name = rng.choice(["parse_duration", "duration_seconds", "to_seconds"])
    source = _src('''
        def $name(text):
            """Parse a duration such as '1h30m' or '2d 4s' into seconds.

            Units: d (86400 s), h (3600 s), m (60 s), s (1 s), case-insensitive; spaces are
            ignored. ValueError for an empty text, an unknown character or a number without unit.
            """
            units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
            total = 0
            number = ""
            for ch in text.replace(" ", "").lower():
                if ch.isdigit():
                    number += ch
                elif ch in units and number:
                    total += int(number) * units[ch]
                    number = ""
                else:
                    raise ValueError(f"bad duration: {text!r}")
            if number or not text.strip():
                raise ValueError(f"bad duration: {text!r}")
            return total
        ''', name=name)
    cases: list[tuple[object, ...]] = [("1h30m",), ("45s",), ("",), ("10",), ("h",), ("2D 4S",)]
    for _ in range(5):
        parts = [f"{rng.randint(0, 99)}{u}" for u in "dhms" if rng.random() < 0.6] or ["7m"]
        cases.append((rng.choice(["", " "]).join(parts),))
    return Unit("text", name, source, cases)


def clamp(rng: random.Random) -> Unit:
    name = rng.choice(["clamp", "bound", "limit_to"])
    source = _src('''
        def $name(value, low, high):
            """Return ``value`` limited to the closed range [low, high].

            ValueError if low > high."""
            if low > high:
                raise ValueError("low > high")
            if value < low:
                return low
            if value > high:
                return high
            return value
        ''', name=name)
    cases: list[tuple[object, ...]] = [(5, 0, 10), (-3, 0, 10), (11, 0, 10), (0, 0, 0), (4, 5, 1)]
    cases += [tuple(_ints(rng, 1, -20, 20) + sorted(_ints(rng, 2, -10, 10))) for _ in range(4)]
    return Unit("numbers", name, source, cases)


def tax(rng: random.Random) -> Unit:
    name = rng.choice(["bracket_tax", "progressive_fee", "tiered_tax"])
    t1 = rng.randrange(1000, 5000, 100)
    t2 = t1 + rng.randrange(2000, 9000, 100)
    r1, r2 = rng.randint(5, 20), rng.randint(21, 45)
    source = _src('''
        def $name(amount):
            """Tax in cents on ``amount`` cents: nothing on the first $t1 cents, $r1% of the part
            above $t1 up to $t2, and $r2% of the part above $t2. Each part is rounded down to whole
            cents separately. ValueError for a negative amount."""
            if amount < 0:
                raise ValueError("negative amount")
            tax = 0
            if amount > $t1:
                tax += (min(amount, $t2) - $t1) * $r1 // 100
            if amount > $t2:
                tax += (amount - $t2) * $r2 // 100
            return tax
        ''', name=name, t1=t1, t2=t2, r1=r1, r2=r2)
    cases: list[tuple[object, ...]] = [(a,) for a in (0, t1, t1 + 1, t1 + 99, t2, t2 + 7, -1)]
    cases += [(rng.randint(0, 3 * t2),) for _ in range(4)]
    return Unit("numbers", name, source, cases)


def month_days(rng: random.Random) -> Unit:
    name = rng.choice(["days_in_month", "month_length", "count_days"])
    source = _src('''
        def $name(year, month):
            """Number of days of ``month`` (1-12) in ``year`` of the Gregorian calendar.

            ValueError for a month outside 1-12."""
            if month < 1 or month > 12:
                raise ValueError("month out of range")
            if month == 2:
                leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
                return 29 if leap else 28
            if month in (4, 6, 9, 11):
                return 30
            return 31
        ''', name=name)
    cases: list[tuple[object, ...]] = [(2024, 2), (1900, 2), (2000, 2), (2023, 2), (2023, 4),
                                       (2023, 12), (2023, 1), (2023, 0), (2023, 13), (2100, 2)]
    cases += [(rng.randint(1890, 2120), rng.randint(1, 12)) for _ in range(3)]
    return Unit("numbers", name, source, cases)


def digit_sum(rng: random.Random) -> Unit:
    name = rng.choice(["digit_sum", "sum_of_digits", "digits_total"])
    base = rng.choice([2, 3, 5, 7, 8, 12, 16])
    source = _src('''
        def $name(n):
            """Sum of the digits of abs(n) written in base $base (0 for 0)."""
            n = abs(n)
            total = 0
            while n > 0:
                total += n % $base
                n //= $base
            return total
        ''', name=name, base=base)
    cases: list[tuple[object, ...]] = [(0,), (base - 1,), (base,), (-base * base - 1,)]
    cases += [(rng.randint(-5000, 100000),) for _ in range(5)]
    return Unit("numbers", name, source, cases)


def isqrt(rng: random.Random) -> Unit:
    name = rng.choice(["int_sqrt", "floor_sqrt", "isqrt_floor"])
    source = _src('''
        def $name(n):
            """Largest integer r with r * r <= n. ValueError for negative n."""
            if n < 0:
                raise ValueError("negative input")
            lo, hi = 0, n + 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if mid * mid <= n:
                    lo = mid
                else:
                    hi = mid
            return lo
        ''', name=name)
    cases: list[tuple[object, ...]] = [(0,), (1,), (3,), (4,), (15,), (16,), (-1,)]
    cases += [(rng.randint(2, 10**6),) for _ in range(4)]
    return Unit("numbers", name, source, cases)


def percent(rng: random.Random) -> Unit:
    name = rng.choice(["percent_change", "relative_change", "growth_pct"])
    digits = rng.randint(1, 3)
    source = _src('''
        def $name(old, new):
            """Change from ``old`` to ``new`` in percent of abs(old), rounded to $digits decimals
            with round(); None when old is 0."""
            if old == 0:
                return None
            return round((new - old) * 100 / abs(old), $digits)
        ''', name=name, digits=digits)
    cases: list[tuple[object, ...]] = [(0, 5), (100, 150), (-50, 25), (3, 1), (7, 7)]
    cases += [tuple(_ints(rng, 2, -500, 500)) for _ in range(4)]
    return Unit("numbers", name, source, cases)


def chunked(rng: random.Random) -> Unit:
    name = rng.choice(["chunked", "split_every", "batches"])
    source = _src('''
        def $name(items, size):
            """Split ``items`` into consecutive lists of ``size`` items; the last one may be
            shorter. ValueError if size < 1."""
            if size < 1:
                raise ValueError("size must be positive")
            return [items[i:i + size] for i in range(0, len(items), size)]
        ''', name=name)
    cases: list[tuple[object, ...]] = [([], 3), ([1, 2, 3], 0), ([1, 2, 3, 4], 2), ([1], 5)]
    cases += [(_ints(rng, rng.randint(1, 9)), rng.randint(1, 4)) for _ in range(4)]
    return Unit("sequences", name, source, cases)


def window_sums(rng: random.Random) -> Unit:
    name = rng.choice(["window_sums", "rolling_sums", "sliding_totals"])
    source = _src('''
        def $name(values, window):
            """Sums of every run of ``window`` consecutive values, in order; [] if there are
            fewer than ``window`` values. ValueError if window < 1."""
            if window < 1:
                raise ValueError("window must be positive")
            sums = []
            for start in range(len(values) - window + 1):
                sums.append(sum(values[start:start + window]))
            return sums
        ''', name=name)
    cases: list[tuple[object, ...]] = [([1, 2, 3], 3), ([1, 2], 3), ([4, 5, 6], 1), ([1], 0)]
    cases += [(_ints(rng, rng.randint(2, 8)), rng.randint(1, 4)) for _ in range(4)]
    return Unit("sequences", name, source, cases)


def merge_sorted(rng: random.Random) -> Unit:
    name = rng.choice(["merge_sorted", "merge_two", "zip_merge"])
    source = _src('''
        def $name(a, b):
            """Merge two ascending lists into one ascending list (stable: on equal values the
            items of ``a`` come first)."""
            out = []
            i = j = 0
            while i < len(a) and j < len(b):
                if a[i] <= b[j]:
                    out.append(a[i])
                    i += 1
                else:
                    out.append(b[j])
                    j += 1
            out.extend(a[i:])
            out.extend(b[j:])
            return out
        ''', name=name)
    cases: list[tuple[object, ...]] = [([], []), ([1, 3], []), ([], [2]), ([1, 4, 9], [2, 4, 10])]
    cases += [(sorted(_ints(rng, rng.randint(1, 5))), sorted(_ints(rng, rng.randint(1, 5))))
              for _ in range(4)]
    return Unit("sequences", name, source, cases)


def longest_run(rng: random.Random) -> Unit:
    name = rng.choice(["longest_run", "max_streak", "longest_streak"])
    source = _src('''
        def $name(values):
            """(value, length) of the longest run of equal adjacent values; the earliest such run
            wins ties. (None, 0) for an empty list."""
            best_value, best_len = None, 0
            i = 0
            while i < len(values):
                j = i
                while j < len(values) and values[j] == values[i]:
                    j += 1
                if j - i > best_len:
                    best_value, best_len = values[i], j - i
                i = j
            return best_value, best_len
        ''', name=name)
    cases: list[tuple[object, ...]] = [([],), ([7],), ([1, 1, 2, 2],), ([3, 4, 4, 4],)]
    cases += [([rng.randint(0, 2) for _ in range(rng.randint(2, 10))],) for _ in range(5)]
    return Unit("sequences", name, source, cases)


def first_index(rng: random.Random) -> Unit:
    name = rng.choice(["first_index", "lower_bound_find", "find_first"])
    source = _src('''
        def $name(items, target):
            """Index of the first occurrence of ``target`` in the ascending list ``items``, or -1.
            Uses binary search."""
            lo, hi = 0, len(items)
            while lo < hi:
                mid = (lo + hi) // 2
                if items[mid] < target:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < len(items) and items[lo] == target:
                return lo
            return -1
        ''', name=name)
    cases: list[tuple[object, ...]] = [([], 1), ([1, 2, 2, 2, 3], 2), ([1, 3], 4), ([1, 3], 0)]
    for _ in range(5):
        items = sorted(rng.randint(0, 6) for _ in range(rng.randint(1, 9)))
        cases.append((items, rng.randint(0, 7)))
    return Unit("sequences", name, source, cases)


def top_k(rng: random.Random) -> Unit:
    name = rng.choice(["most_common", "top_words", "frequent_items"])
    source = _src('''
        def $name(words, k):
            """The ``k`` most frequent words as (word, count) tuples, by count descending, then
            word ascending."""
            counts = {}
            for w in words:
                counts[w] = counts.get(w, 0) + 1
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            return ranked[:k]
        ''', name=name)
    cases: list[tuple[object, ...]] = [([], 2), (["b", "a", "b"], 1), (["x", "y"], 5)]
    cases += [([rng.choice("abcde") for _ in range(rng.randint(3, 12))], rng.randint(1, 4))
              for _ in range(5)]
    return Unit("sequences", name, source, cases)
