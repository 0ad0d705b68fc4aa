"""Catalogue of function specifications for the ``spec`` generator.

Each entry takes an rng and returns a ``Spec``: the exact specification text the agent gets, the
reference implementation (the oracle writes it; the generator execs it to compute expected values),
the public signatures for the stub, and many generated test inputs.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field

from ._common import dedent


@dataclass
class Spec:
    title: str
    module: str
    signatures: list[tuple[str, str]]  # (function name, "def name(args):" line)
    reference: str
    text: str
    cases: list[tuple[str, tuple[object, ...]]] = field(default_factory=list)
    difficulty: str = "medium"


def _t(text: str, **subs: object) -> str:
    return string.Template(dedent(text)).substitute({k: str(v) for k, v in subs.items()})


def _runs(rng: random.Random, alphabet: str, max_run: int) -> str:
    return "".join(rng.choice(alphabet) * rng.randint(1, max_run) for _ in range(rng.randint(1, 6)))


def rle(rng: random.Random) -> Spec:
    enc, dec = rng.choice([("rle_encode", "rle_decode"), ("pack", "unpack"),
                           ("compress_runs", "expand_runs")])
    min_run, max_run = rng.randint(2, 4), rng.choice([9, 12, 20, 99])
    ref = _t('''
        DIGITS = "0123456789"
        MIN_RUN = $min_run
        MAX_RUN = $max_run


        def $enc(text):
            if any(ch in DIGITS for ch in text):
                raise ValueError("digits cannot be encoded")
            out = []
            i = 0
            while i < len(text):
                j = i
                while j < len(text) and text[j] == text[i]:
                    j += 1
                run = j - i
                while run > 0:
                    chunk = min(run, MAX_RUN)
                    out.append(f"{chunk}{text[i]}" if chunk >= MIN_RUN else text[i] * chunk)
                    run -= chunk
                i = j
            return "".join(out)


        def $dec(code):
            out = []
            count = ""
            for ch in code:
                if ch in DIGITS:
                    if not count and ch == "0":
                        raise ValueError("count with a leading zero")
                    count += ch
                else:
                    out.append(ch * (int(count) if count else 1))
                    count = ""
            if count:
                raise ValueError("count without a character")
            return "".join(out)
        ''', enc=enc, dec=dec, min_run=min_run, max_run=max_run)
    text = _t('''
        `$enc(text: str) -> str` run-length encodes a string that contains no ASCII digit:
        - Split `text` into maximal runs of the same character. A run longer than $max_run is cut
          into chunks of $max_run characters from the left (the last chunk holds the rest).
        - A chunk of length L >= $min_run is written as the decimal number L followed by the
          character; a shorter chunk is written literally (the character repeated L times).
        - `ValueError` if `text` contains any of `0123456789`. The empty string encodes to `""`.

        `$dec(code: str) -> str` is the lenient inverse: a decimal count followed by a non-digit
        character expands to that character repeated count times; a non-digit character without
        a count stands for itself (so any count >= 1 is accepted, even below $min_run or above
        $max_run). `ValueError` if a count starts with `0` or the code ends with a count.
        ''', enc=enc, dec=dec, min_run=min_run, max_run=max_run)
    cases: list[tuple[str, tuple[object, ...]]] = [(enc, ("",)), (enc, ("a1b",)),
                                                   (enc, ("x" * (2 * max_run + min_run),)),
                                                   (enc, ("y" * (max_run + 1),))]
    cases += [(enc, (_runs(rng, "ab c-!", max_run + 3),)) for _ in range(14)]
    cases += [(dec, ("",)), (dec, ("3a",)), (dec, ("a3",)), (dec, ("03a",)), (dec, ("12x y",)),
              (dec, ("1a1b",))]
    for _ in range(10):
        s = _runs(rng, "xyz. ", max_run + 2)
        cases.append((dec, (s if rng.random() < 0.3 else _encode(s, min_run, max_run),)))
    sigs = [(enc, f"def {enc}(text: str) -> str:"), (dec, f"def {dec}(code: str) -> str:")]
    return Spec("Run-length encoding for the log shipper", rng.choice(["rle", "runlength"]),
                sigs, ref, text, cases, "easy")


def _encode(s: str, min_run: int, max_run: int) -> str:
    out, i = "", 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        run = j - i
        while run:
            chunk = min(run, max_run)
            out += f"{chunk}{s[i]}" if chunk >= min_run else s[i] * chunk
            run -= chunk
        i = j
    return out


def roman(rng: random.Random) -> Spec:
    subtractive = rng.random() < 0.5
    lower = rng.random() < 0.4
    top = rng.choice([999, 2999, 3999]) if subtractive else rng.choice([999, 2999, 4999])
    pairs = ([(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
              (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
             if subtractive else
             [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")])
    if lower:
        pairs = [(v, s.lower()) for v, s in pairs]
    ref = _t('''
        NUMERALS = $pairs
        MAX_VALUE = $top


        def to_roman(n):
            if type(n) is not int or not 1 <= n <= MAX_VALUE:
                raise ValueError("out of range")
            out = []
            for value, symbol in NUMERALS:
                while n >= value:
                    out.append(symbol)
                    n -= value
            return "".join(out)


        def from_roman(text):
            if type(text) is not str or not text:
                raise ValueError("empty numeral")
            table = {symbol: value for value, symbol in NUMERALS}
            total, i = 0, 0
            while i < len(text):
                if text[i:i + 2] in table:
                    total += table[text[i:i + 2]]
                    i += 2
                elif text[i] in table:
                    total += table[text[i]]
                    i += 1
                else:
                    raise ValueError("bad symbol")
            if not 1 <= total <= MAX_VALUE or to_roman(total) != text:
                raise ValueError("not canonical")
            return total
        ''', pairs=repr(pairs), top=top)
    symbols = ", ".join(f"{s}={v}" for v, s in pairs)
    style = ("the usual subtractive forms (IV, IX, XL, XC, CD, CM) are used" if subtractive else
             "no subtractive forms are used: 4 is IIII, 9 is VIIII, 40 is XXXX, 900 is DCCCC")
    case = "lower case" if lower else "upper case"
    style = style.lower() if lower else style
    text = _t('''
        `to_roman(n: int) -> str` and `from_roman(text: str) -> int` convert between integers
        1..$top and Roman numerals written in **$case** with these symbols: $symbols.
        - `to_roman` writes the greedy form, largest symbols first; $style.
          `ValueError` if n is not in 1..$top.
        - `from_roman` accepts exactly the strings `to_roman` produces (same case, canonical form
          only) and returns their value; anything else (empty string, other case, a
          non-canonical form, a value above $top) raises `ValueError`.
        ''', top=top, case=case, symbols=symbols, style=style)
    fixed = (1, 4, 9, 14, 40, 90, 400, 1994, top, 0, top + 1)
    cases: list[tuple[str, tuple[object, ...]]] = [("to_roman", (n,)) for n in fixed]
    cases += [("to_roman", (rng.randint(1, top),)) for _ in range(8)]
    conv = dict(pairs)
    for n in [rng.randint(1, top) for _ in range(8)]:
        s = ""
        for v, sym in pairs:
            s += sym * (n // v)
            n %= v
        cases.append(("from_roman", (s,)))
        cases.append(("from_roman", (s.swapcase(),)))
    bad = ["", "IIV", "IM", "VV", "XIIII", "IIII", "VIIII", "MMMMM", "IC", "ABC", "XLX"]
    cases += [("from_roman", (b.lower() if lower else b,)) for b in bad]
    cases.append(("from_roman", (conv[1000] * (top // 1000 + 1),)))
    sigs = [("to_roman", "def to_roman(n: int) -> str:"),
            ("from_roman", "def from_roman(text: str) -> int:")]
    return Spec("Roman numerals for chapter labels", rng.choice(["roman", "numerals"]), sigs,
                ref, text, cases, "medium")



def version(rng: random.Random) -> Spec:
    name = rng.choice(["compare_versions", "version_cmp", "cmp_release"])
    tags = rng.choice([("dev", "alpha", "beta", "rc"), ("a", "b", "rc"), ("alpha", "beta", "pre"),
                       ("snapshot", "milestone", "rc")])
    max_parts, allow_v = rng.randint(3, 5), rng.random() < 0.5
    ref = _t('''
        DIGITS = "0123456789"
        TAGS = $tags
        MAX_PARTS = $max_parts
        ALLOW_V = $allow_v


        def _number(text):
            if not text or any(ch not in DIGITS for ch in text):
                raise ValueError(f"bad number {text!r}")
            if len(text) > 1 and text[0] == "0":
                raise ValueError(f"leading zero in {text!r}")
            return int(text)


        def _key(version):
            if type(version) is not str:
                raise ValueError("not a string")
            if ALLOW_V and version.startswith("v"):
                version = version[1:]
            core, sep, pre = version.partition("-")
            parts = core.split(".")
            if len(parts) > MAX_PARTS:
                raise ValueError("too many components")
            nums = [_number(p) for p in parts]
            while nums and nums[-1] == 0:
                nums.pop()
            if not sep:
                return (tuple(nums), 1, 0, 0)
            tag = pre.rstrip(DIGITS)
            if tag not in TAGS:
                raise ValueError(f"unknown tag {tag!r}")
            number = pre[len(tag):]
            return (tuple(nums), 0, TAGS.index(tag), _number(number) if number else 0)


        def $name(a, b):
            x, y = _key(a), _key(b)
            return (x > y) - (x < y)
        ''', name=name, tags=repr(tags), max_parts=max_parts, allow_v=allow_v)
    v_rule = ("An optional leading lower-case `v` is ignored (`v1.2` is `1.2`)." if allow_v else
              "No prefix is allowed (`v1.2` is invalid).")
    order = " < ".join(f"`{t}`" for t in tags)
    text = _t('''
        `$name(a: str, b: str) -> int` returns -1 if version `a` is lower than `b`, 0 if they are
        equal and 1 if it is higher. A version is `CORE` or `CORE-TAGN`:
        - CORE is 1 to $max_parts dot-separated numbers; a number is a non-empty string of ASCII
          digits without leading zeros (`0` itself is fine). $v_rule
        - Missing trailing numbers count as 0: `1.2` equals `1.2.0`. Cores compare numerically,
          component by component.
        - `-TAGN` marks a pre-release: TAG is one of $order (in that order), immediately
          followed by an optional number N (same rules as above; missing means 0), e.g.
          `2.0-${tag1}3`. A pre-release sorts before the release with the same core; two
          pre-releases of the same core compare by TAG, then by N.
        - Anything else (empty string, empty component, unknown tag, `-` with nothing after it,
          a second `-`, spaces, ...) raises `ValueError`.
        ''', name=name, max_parts=max_parts, v_rule=v_rule, order=order, tag1=tags[-1])
    pool = ["1", "1.0", "1.0.0", "1.2", "1.10", "1.9.9", "2", "0.1", "10.0.1", "2.0.0.0.1"]
    pres = [f"-{t}{n}" for t in tags for n in ("", "1", "2", "10")]
    cases: list[tuple[str, tuple[object, ...]]] = []
    for _ in range(26):
        a = rng.choice(pool) + (rng.choice(pres) if rng.random() < 0.4 else "")
        b = (a if rng.random() < 0.15 else rng.choice(pool)) + (
            rng.choice(pres) if rng.random() < 0.4 else "")
        cases.append((name, (("v" if rng.random() < 0.15 else "") + a, b)))
    bad = ["", "1..2", "01.2", "1.2-", "1.2-gamma", f"1.2-{tags[0]}-1", " 1.2", "1.2.3.4.5.6",
           f"1-{tags[0]}01", "V1.0", "1.a", f"1.0-{tags[0].upper()}"]
    cases += [(name, (b, "1.0")) for b in bad] + [(name, ("1.0", "1.0.0")), (name, ("v2", "2.0"))]
    sigs = [(name, f"def {name}(a: str, b: str) -> int:")]
    return Spec("Version ordering for the release tooling", rng.choice(["versions", "semverish"]),
                sigs, ref, text, cases, "hard")


def wrap(rng: random.Random) -> Spec:
    name = rng.choice(["wrap_text", "fill_lines", "reflow"])
    split_long = rng.random() < 0.5
    ref = _t('''
        SPLIT_LONG = $split_long


        def $name(text, width):
            if width < 1:
                raise ValueError("width must be >= 1")
            paragraphs, current = [], []
            for line in text.split("\\n"):
                if line.strip():
                    current.extend(line.split())
                elif current:
                    paragraphs.append(current)
                    current = []
            if current:
                paragraphs.append(current)
            out = []
            for words in paragraphs:
                if out:
                    out.append("")
                pieces = []
                for word in words:
                    if SPLIT_LONG:
                        pieces += [word[i:i + width] for i in range(0, len(word), width)]
                    else:
                        pieces.append(word)
                line = ""
                for piece in pieces:
                    if not line:
                        line = piece
                    elif len(line) + 1 + len(piece) <= width:
                        line += " " + piece
                    else:
                        out.append(line)
                        line = piece
                out.append(line)
            return out
        ''', name=name, split_long=split_long)
    long_rule = ("A word longer than `width` is first cut into pieces of exactly `width` "
                 "characters (the last piece may be shorter); the pieces are then placed like "
                 "separate words." if split_long else
                 "A word longer than `width` is never cut: it gets a line of its own, which is "
                 "then longer than `width`.")
    text = _t('''
        `$name(text: str, width: int) -> list[str]` re-flows `text` into lines of at most
        `width` characters and returns the lines (without newline characters):
        - `text` is split into lines at `\\n`. A line that is empty or contains only whitespace
          ends a paragraph; consecutive such lines, and such lines at the start or end, are
          equivalent to one (or none). Line breaks inside a paragraph mean nothing.
        - Words are the maximal runs of non-whitespace characters (as `str.split()` finds them).
        - Each paragraph is filled greedily: a word goes on the current line, separated by one
          space, if the line stays within `width`; otherwise it starts a new line. Lines have no
          leading or trailing spaces. $long_rule
        - Paragraphs are separated by exactly one empty string in the result. A text without
          words gives `[]`. `ValueError` if width < 1.
        ''', name=name, long_rule=long_rule)
    vocab = ["a", "an", "the", "lorem", "ipsum", "dolor", "sit", "amet", "consectetur",
             "adipiscing", "elit", "x", "supercalifragilistic", "of", "data-driven"]
    cases: list[tuple[str, tuple[object, ...]]] = [(name, ("", 10)), (name, ("word", 0)),
                                                   (name, ("  \n\t\n", 5)),
                                                   (name, ("abcdefghij klm", 4))]
    for _ in range(22):
        paras = []
        for _ in range(rng.randint(1, 3)):
            words = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
            paras.append("".join(w + rng.choice([" ", " ", "  ", "\n", "\t"]) for w in words))
        sep = rng.choice(["\n\n", "\n \n", "\n\n\n", "\n\t\n"])
        cases.append((name, (rng.choice(["", "\n"]) + sep.join(paras), rng.randint(3, 24))))
    sigs = [(name, f"def {name}(text: str, width: int) -> list[str]:")]
    return Spec("Plain-text re-flow for e-mail bodies", rng.choice(["wrapping", "plaintext"]), sigs,
                ref, text, cases, "medium")
