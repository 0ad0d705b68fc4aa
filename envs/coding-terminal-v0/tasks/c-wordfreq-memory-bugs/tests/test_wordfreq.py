import glob
import os
import random
import re
import shutil
import subprocess
from collections import Counter

import pytest

MAKE = "/usr/bin/make"
GCC = "/usr/bin/gcc"
WORD = re.compile(rb"[A-Za-z0-9]+")


def reference(chunks, top=10, minlen=1):
    words = []
    for data in chunks:
        words += [w.lower() for w in WORD.findall(data) if len(w) >= minlen]
    c = Counter(words)
    items = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
    top = max(0, top)
    out = b"".join(b"%d %s\n" % (n, w) for w, n in items[:top])
    return out + b"total %d distinct %d\n" % (len(words), len(c))


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    d = tmp_path_factory.mktemp("wf")
    proj = d / "proj"
    shutil.copytree("/app", proj, symlinks=True)
    subprocess.run([MAKE, "-C", str(proj), "clean"], capture_output=True, timeout=60)
    p = subprocess.run([MAKE, "-C", str(proj)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (proj / "wordfreq").exists()
    srcs = sorted(glob.glob(str(proj / "src" / "*.c")))
    p = subprocess.run([GCC, "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                        "-fno-omit-frame-pointer", "-I", str(proj / "src"), *srcs, "-o", str(d / "wf_asan")],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    return {"plain": proj / "wordfreq", "asan": d / "wf_asan", "dir": d}


def run(binary, args=(), stdin=b""):
    env = {"PATH": "/usr/bin:/bin", "ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1"}
    p = subprocess.run([str(binary), *args], input=stdin, capture_output=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-3000:].decode("latin-1")
    return p.stdout


VOCAB = ["the", "The", "THE", "of", "and", "to", "a", "in", "is", "it", "you", "that", "42", "x1",
         "Data", "data", "error", "Error", "warn", "ok", "foo", "bar", "baz", "qux", "zz9"]
SEPS = [b" ", b"  ", b", ", b". ", b"\n", b"\t", b"-", b"'", b"; ", b"\r\n"]


def small_text(rng):
    parts = []
    for _ in range(rng.randrange(0, 120)):
        parts.append(rng.choice(VOCAB).encode())
        parts.append(b"\n" if rng.random() < 0.1 else rng.choice(SEPS))
    return b"".join(parts)


def big_text(rng, n_words, vocab_size, long_word_rate=0.0, line_len=80, junk=False):
    vocab = []
    for i in range(vocab_size):
        L = rng.randrange(1, 12)
        w = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
                    for _ in range(L))
        vocab.append(w.encode())
    out = bytearray()
    col = 0
    for _ in range(n_words):
        if rng.random() < long_word_rate:
            w = bytes(rng.choice(b"abcdefXYZ0123456789") for _ in range(rng.randrange(60, 5000)))
        else:
            w = rng.choice(vocab)
        out += w
        col += len(w)
        if junk and rng.random() < 0.2:
            out += bytes([rng.choice([0, 0, 128, 200, 255, 7, 0x7f, ord("_")])])
        if col > line_len:
            out += b"\n"
            col = 0
        else:
            out += rng.choice([b" ", b",", b" - ", b"\t"])
    return bytes(out)


# ---- behaviour that already works and must keep working ----

@pytest.mark.parametrize("seed", range(3))
def test_small_inputs(bins, seed):
    rng = random.Random(seed)
    for _ in range(10):
        t = small_text(rng)
        assert run(bins["plain"], stdin=t) == reference([t])


def test_options_and_files(bins, tmp_path):
    rng = random.Random(9)
    a, b = small_text(rng) + b"tail", b"head" + small_text(rng)
    fa, fb = tmp_path / "a.txt", tmp_path / "b.txt"
    fa.write_bytes(a)
    fb.write_bytes(b)
    assert run(bins["plain"], ["-n", "3", str(fa), str(fb)]) == reference([a, b], top=3)
    assert run(bins["plain"], ["-m", "3", str(fa)]) == reference([a], minlen=3)
    assert run(bins["plain"], ["-n", "0"], stdin=a) == reference([a], top=0)
    assert run(bins["plain"], ["-n", "50", "-m", "2"], stdin=b) == reference([b], top=50, minlen=2)
    assert run(bins["plain"], stdin=b"") == b"total 0 distinct 0\n"


# ---- reported bugs ----

def test_very_long_lines(bins):
    rng = random.Random(21)
    t = big_text(rng, 20000, 150, line_len=50000)
    assert run(bins["plain"], ["-n", "25"], stdin=t) == reference([t], top=25)


def test_very_long_words(bins):
    rng = random.Random(22)
    t = big_text(rng, 3000, 100, long_word_rate=0.02, line_len=300)
    t += b"\n" + b"Z" * 70000 + b" " + b"z" * 70000 + b"\n"
    assert run(bins["plain"], ["-n", "40"], stdin=t) == reference([t], top=40)


def test_large_vocabulary(bins):
    rng = random.Random(23)
    t = big_text(rng, 60000, 20000)
    assert run(bins["plain"], ["-n", "100"], stdin=t) == reference([t], top=100)


def test_nul_and_high_bytes(bins):
    rng = random.Random(24)
    t = big_text(rng, 5000, 300, junk=True)
    t += b"alpha\x00beta\x00\x00gamma\xffdelta\x80alpha\n\x00\x00\n"
    assert run(bins["plain"], ["-n", "30"], stdin=t) == reference([t], top=30)


@pytest.mark.parametrize("seed", range(3))
def test_sanitizers_clean(bins, seed):
    rng = random.Random(40 + seed)
    chunks = [small_text(rng),
              big_text(rng, 8000, rng.choice([50, 3000]), long_word_rate=0.01,
                       line_len=rng.choice([80, 3000]), junk=True)]
    paths = []
    for i, c in enumerate(chunks):
        p = bins["dir"] / ("in%d_%d" % (seed, i))
        p.write_bytes(c)
        paths.append(str(p))
    assert run(bins["asan"], ["-n", "20"] + paths) == reference(chunks, top=20)


@pytest.mark.parametrize("seed", range(3))
def test_random_mixed(bins, seed):
    rng = random.Random(60 + seed)
    t = big_text(rng, rng.randrange(10000, 40000), rng.randrange(10, 8000),
                 long_word_rate=rng.choice([0, 0.005]), line_len=rng.choice([40, 1000, 1023, 1024, 9000]),
                 junk=rng.random() < 0.5)
    top = rng.choice([1, 10, 1000, 100000])
    minlen = rng.choice([1, 1, 3])
    assert run(bins["plain"], ["-n", str(top), "-m", str(minlen)], stdin=t) == reference([t], top, minlen)
