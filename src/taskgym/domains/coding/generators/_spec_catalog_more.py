"""More function specifications for the ``spec`` generator (numeric and structural ones)."""

from __future__ import annotations

import random

from ._spec_catalog import Spec, _t


def intervals(rng: random.Random) -> Spec:
    name = rng.choice(["merge_intervals", "coalesce_ranges", "union_spans"])
    mode = rng.choice(["closed-adjacent", "closed", "half-open"])
    gap = 1 if mode == "closed-adjacent" else 0
    ref = _t('''
        GAP = $gap
        DROP_EMPTY = $drop


        def $name(intervals):
            items = []
            for iv in intervals:
                if type(iv) not in (list, tuple) or len(iv) != 2:
                    raise ValueError("interval must be a pair")
                start, end = iv
                if type(start) is not int or type(end) is not int or start > end:
                    raise ValueError("bad interval")
                if DROP_EMPTY and start == end:
                    continue
                items.append((start, end))
            items.sort()
            out = []
            for start, end in items:
                if out and start <= out[-1][1] + GAP:
                    out[-1] = (out[-1][0], max(out[-1][1], end))
                else:
                    out.append((start, end))
            return out
        ''', name=name, gap=gap, drop=mode == "half-open")
    meaning = {
        "closed-adjacent": ("`(start, end)` is the closed integer range start..end (both "
                            "included). Two intervals merge when they overlap or are adjacent: "
                            "`(1, 3)` and `(4, 6)` merge into `(1, 6)`, `(1, 3)` and `(5, 6)` do "
                            "not."),
        "closed": ("`(start, end)` is the closed range start..end (both included). Two intervals "
                   "merge when they share at least one point: `(1, 3)` and `(3, 6)` merge into "
                   "`(1, 6)`, `(1, 3)` and `(4, 6)` do not."),
        "half-open": ("`(start, end)` is the half-open range [start, end). Two intervals merge "
                      "when they overlap or touch: `(1, 3)` and `(3, 6)` merge into `(1, 6)`. "
                      "Empty intervals (start == end) are ignored entirely (they never join "
                      "two other intervals and never appear in the result)."),
    }[mode]
    text = _t('''
        `$name(intervals: list) -> list[tuple[int, int]]` merges a list of intervals, each a
        2-element tuple or list `(start, end)` of ints with start <= end. $meaning
        - The result is a new list of tuples, sorted by start, in which no two intervals would
          merge; the input list is not modified. An empty input gives `[]`.
        - `ValueError` if an item is not a 2-element list/tuple, a bound is not an `int`
          (`bool` is not accepted either), or start > end.
        ''', name=name, meaning=meaning)
    cases: list[tuple[str, tuple[object, ...]]] = [
        (name, ([],)), (name, ([(1, 3), (4, 6)],)), (name, ([(1, 3), (3, 6)],)),
        (name, ([[5, 5]],)), (name, ([(3, 1)],)), (name, ([(1, 2, 3)],)), (name, ([(1, "2")],)),
        (name, ([(True, 2)],)), (name, ([[0, 0], [0, 0], [1, 1]],))]
    for _ in range(20):
        ivs = []
        for _ in range(rng.randint(1, 8)):
            a = rng.randint(-10, 30)
            b = a + rng.randint(0, 6)
            ivs.append((a, b) if rng.random() < 0.6 else [a, b])
        cases.append((name, (ivs,)))
    sigs = [(name, f"def {name}(intervals: list) -> list[tuple[int, int]]:")]
    return Spec("Interval merging for the booking calendar", rng.choice(["spans", "intervals"]),
                sigs, ref, text, cases, "easy")


def base_convert(rng: random.Random) -> Spec:
    pool = "0123456789abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"
    alphabet = "".join(rng.sample(pool, rng.randint(5, 40)))
    sep, group = rng.choice(["-", "_", "."]), rng.choice([0, 3, 4])
    enc, dec = rng.choice([("encode_id", "decode_id"), ("to_code", "from_code"),
                           ("int_to_token", "token_to_int")])
    ref = _t('''
        ALPHABET = "$alphabet"
        SEP = "$sep"
        GROUP = $group


        def $enc(n):
            if type(n) is not int or n < 0:
                raise ValueError("n must be a non-negative int")
            base = len(ALPHABET)
            digits = []
            while True:
                n, r = divmod(n, base)
                digits.append(ALPHABET[r])
                if n == 0:
                    break
            if GROUP:
                digits = [d + SEP if i and i % GROUP == 0 else d for i, d in enumerate(digits)]
            return "".join(reversed(digits))


        def $dec(code):
            if type(code) is not str:
                raise ValueError("code must be a str")
            code = code.replace(SEP, "")
            if not code:
                raise ValueError("empty code")
            n = 0
            for ch in code:
                i = ALPHABET.find(ch)
                if i < 0:
                    raise ValueError(f"bad character {ch!r}")
                n = n * len(ALPHABET) + i
            return n
        ''', alphabet=alphabet, sep=sep, group=group, enc=enc, dec=dec)
    grouping = (f"the digits are then split into groups of {group} counted from the right "
                f"(the leftmost group may be shorter) joined by `{sep}`, e.g. a "
                f"{group + 2}-digit code looks like `dd{sep}{'d' * group}`" if group else
                "no separators are inserted")
    text = _t('''
        Short ids are written in base $base with this digit alphabet (digit value = position,
        starting at 0): `$alphabet`

        - `$enc(n: int) -> str`: the base-$base digits of n, most significant first, without
          leading zero-digits (0 is written as `$zero`); $grouping. `ValueError` if n is not an
          `int` or is negative.
        - `$dec(code: str) -> int`: the inverse. Every `$sep` in `code` is ignored (wherever it
          is); the remaining characters must all be alphabet digits (case-sensitive) and there
          must be at least one; leading zero-digits are allowed. `ValueError` otherwise.
        ''', base=len(alphabet), alphabet=alphabet, enc=enc, dec=dec, zero=alphabet[0],
              grouping=grouping, sep=sep)
    cases: list[tuple[str, tuple[object, ...]]] = [(enc, (0,)), (enc, (-1,)), (enc, ("7",)),
                                                   (enc, (len(alphabet),))]
    cases += [(enc, (rng.randint(1, 10 ** rng.randint(1, 12)),)) for _ in range(12)]
    cases += [(dec, ("",)), (dec, (sep,)), (dec, (alphabet[0] * 3,)), (dec, (alphabet[::-1],)),
              (dec, (sep.join(alphabet),)), (dec, (alphabet[1] + "!",))]
    for _ in range(8):
        code = "".join(rng.choice(alphabet + sep) for _ in range(rng.randint(1, 9)))
        cases.append((dec, (code,)))
    sigs = [(enc, f"def {enc}(n: int) -> str:"), (dec, f"def {dec}(code: str) -> int:")]
    return Spec("Compact ids with a custom alphabet", rng.choice(["shortid", "idcodec"]), sigs,
                ref, text, cases, "medium")


def checksum(rng: random.Random) -> Spec:
    mod = rng.choice([10, 11])
    weights = rng.choice([(3, 1), (1, 3), (2, 1), (7, 3, 1), (2, 3, 4, 5, 6, 7), (9, 7, 3)])
    make, check = rng.choice([("check_digit", "is_valid"), ("compute_check", "verify"),
                              ("checksum_char", "has_valid_checksum")])
    ref = _t('''
        DIGITS = "0123456789"
        WEIGHTS = $weights
        MOD = $mod


        def $make(payload):
            if type(payload) is not str or not payload or any(c not in DIGITS for c in payload):
                raise ValueError("payload must be a non-empty string of digits")
            total = 0
            for i, ch in enumerate(reversed(payload)):
                total += int(ch) * WEIGHTS[i % len(WEIGHTS)]
            value = (MOD - total % MOD) % MOD
            return "X" if value == 10 else str(value)


        def $check(code):
            if type(code) is not str or len(code) < 2:
                return False
            try:
                return $make(code[:-1]) == code[-1]
            except ValueError:
                return False
        ''', weights=repr(weights), mod=mod, make=make, check=check)
    text = _t('''
        Our account numbers end in one check character computed from the digits before it
        (the payload).
        - `$make(payload: str) -> str`: `payload` must be a non-empty string of ASCII digits
          (`ValueError` otherwise). Multiply the payload digits by the weights $weights, starting
          with the **rightmost** digit and cycling through the weights (rightmost digit x
          ${w0}, the next one to the left x ${w1}, ...). With S the sum of the products, the check
          value is (${mod} - S mod ${mod}) mod ${mod}, written as its decimal digit; $ten.
        - `$check(code: str) -> bool`: True when `code` is a payload followed by its correct
          check character; False for anything else (too short, non-digits in the payload, wrong
          or lower-case check character, ...). It never raises.
        ''', make=make, check=check, weights=", ".join(map(str, weights)), w0=weights[0],
              w1=weights[1], mod=mod,
              ten="the value 10 is written `X`" if mod == 11 else "it is always 0-9")
    cases: list[tuple[str, tuple[object, ...]]] = [(make, ("0",)), (make, ("",)), (make, ("12a",)),
                                                   (make, (" 123",))]
    payloads = ["".join(rng.choice("0123456789") for _ in range(rng.randint(1, 14)))
                for _ in range(14)]
    cases += [(make, (p,)) for p in payloads]
    for p in payloads[:10]:
        total = sum(int(ch) * weights[i % len(weights)] for i, ch in enumerate(reversed(p)))
        good = "0123456789X"[(mod - total % mod) % mod]
        cases.append((check, (p + (good if rng.random() < 0.6 else rng.choice("0123456789X")),)))
    cases += [(check, ("",)), (check, ("7",)), (check, ("12-4",)), (check, ("x0",)),
              (check, ("100",)), (check, ("0" * 6,))]
    sigs = [(make, f"def {make}(payload: str) -> str:"),
            (check, f"def {check}(code: str) -> bool:")]
    return Spec("Check characters for account numbers", rng.choice(["checkdigit", "acctcheck"]),
                sigs, ref, text, cases, "easy")


def spiral(rng: random.Random) -> Spec:
    name = rng.choice(["spiral_order", "spiral", "unroll_spiral"])
    clockwise = rng.random() < 0.5
    ref = _t('''
        CLOCKWISE = $clockwise


        def $name(matrix):
            if type(matrix) is not list or any(type(row) is not list for row in matrix):
                raise ValueError("matrix must be a list of lists")
            width = len(matrix[0]) if matrix else 0
            if any(len(row) != width for row in matrix):
                raise ValueError("ragged matrix")
            out = []
            top, bottom, left, right = 0, len(matrix) - 1, 0, width - 1
            while top <= bottom and left <= right:
                if CLOCKWISE:
                    out += [matrix[top][c] for c in range(left, right + 1)]
                    top += 1
                    out += [matrix[r][right] for r in range(top, bottom + 1)]
                    right -= 1
                    if top <= bottom:
                        out += [matrix[bottom][c] for c in range(right, left - 1, -1)]
                        bottom -= 1
                    if left <= right:
                        out += [matrix[r][left] for r in range(bottom, top - 1, -1)]
                        left += 1
                else:
                    out += [matrix[r][left] for r in range(top, bottom + 1)]
                    left += 1
                    out += [matrix[bottom][c] for c in range(left, right + 1)]
                    bottom -= 1
                    if left <= right:
                        out += [matrix[r][right] for r in range(bottom, top - 1, -1)]
                        right -= 1
                    if top <= bottom:
                        out += [matrix[top][c] for c in range(right, left - 1, -1)]
                        top += 1
            return out
        ''', name=name, clockwise=clockwise)
    walk = ("**clockwise**: along the top row to the right, down the right column, along the "
            "bottom row to the left, up the left column" if clockwise else
            "**counter-clockwise**: down the left column, along the bottom row to the right, up "
            "the right column, along the top row to the left")
    text = _t('''
        `$name(matrix: list[list]) -> list` returns the elements of a rectangular matrix (a list
        of rows) in spiral order, starting at the top-left element and walking $walk, then
        continuing inwards ring by ring. Every element appears exactly once; a single remaining
        row or column is walked once in the direction the spiral reaches it.
        - `[]`, or a list of empty rows, gives `[]`.
        - `ValueError` if `matrix` is not a list of lists or its rows differ in length.
        ''', name=name, walk=walk)
    cases: list[tuple[str, tuple[object, ...]]] = [(name, ([],)), (name, ([[], []],)),
                                                   (name, ([[1, 2], [3]],)), (name, ((1, 2),)),
                                                   (name, ([[7]],)), (name, ([[1, 2, 3]],)),
                                                   (name, ([[1], [2], [3]],))]
    for _ in range(18):
        rows, cols = rng.randint(1, 6), rng.randint(1, 6)
        first = rng.randint(0, 50)
        cases.append((name, ([[first + r * cols + c for c in range(cols)] for r in range(rows)],)))
    sigs = [(name, f"def {name}(matrix: list[list]) -> list:")]
    return Spec("Spiral traversal for the LED panel driver", rng.choice(["spiral", "panel"]),
                sigs, ref, text, cases, "medium")
