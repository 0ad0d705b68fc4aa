import math
import os
import random
import shutil
import subprocess

import pytest

MAKE = "/usr/bin/make"
SRC_FILES = ["src/main.c", "src/stats.c", "src/parse.c", "include/config.h",
             "include/parse.h", "include/stats.h"]


def fresh_copy(dest):
    shutil.copytree("/app", dest, symlinks=True)
    subprocess.run([MAKE, "-C", str(dest), "clean"], capture_output=True, timeout=60)
    for root, _, files in os.walk(dest):
        for f in files:
            if f.endswith((".o", ".d")) or f in ("statcalc", "version.h"):
                os.unlink(os.path.join(root, f))
    # pristine sources, so edits to C files cannot stand in for a Makefile fix
    for rel, text in PRISTINE.items():
        (dest / rel).write_text(text)
    return dest


def make(d, *args):
    p = subprocess.run([MAKE, "-C", str(d), *args], capture_output=True, text=True, timeout=120)
    return p


def run(binary, stdin, *args):
    p = subprocess.run([str(binary), *args], input=stdin, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def reference(text, prec=3):
    vals, invalid = [], 0
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        for tok in line.split():
            try:
                vals.append(float(tok))
            except ValueError:
                invalid += 1
    out = ["count: %d" % len(vals)]
    if vals:
        s = 0.0
        for v in vals:
            s += v
        mean = s / len(vals)
        sq = 0.0
        for v in vals:
            sq += (v - mean) * (v - mean)
        sd = math.sqrt(sq / len(vals))
        vs = sorted(vals)
        n = len(vs)
        med = vs[n // 2] if n % 2 else (vs[n // 2 - 1] + vs[n // 2]) / 2.0
        for name, v in [("min", vs[0]), ("max", vs[-1]), ("mean", mean), ("stddev", sd), ("median", med)]:
            out.append("%s: %.*f" % (name, prec, v))
    out.append("invalid: %d" % invalid)
    return "\n".join(out) + "\n"


def gen_input(rng):
    lines = []
    for _ in range(rng.randrange(0, 60)):
        r = rng.random()
        if r < 0.1:
            lines.append("# comment %d" % rng.randrange(100))
        elif r < 0.15:
            lines.append("")
        else:
            toks = []
            for _ in range(rng.randrange(1, 6)):
                q = rng.random()
                if q < 0.08:
                    toks.append(rng.choice(["abc", "12x", "--5", "x1", "1.2.3"]))
                elif q < 0.5:
                    toks.append(str(rng.randrange(-1000, 1000)))
                else:
                    toks.append("%.*f" % (rng.randrange(0, 5), rng.uniform(-500, 500)))
            lines.append(rng.choice([" ", "\t", "  "]).join(toks))
    return "\n".join(lines) + ("\n" if lines else "")


PRISTINE = {}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    for rel in SRC_FILES + ["VERSION"]:
        PRISTINE[rel] = open(os.path.join(os.path.dirname(__file__), "pristine", rel)).read()
    d = fresh_copy(tmp_path_factory.mktemp("b") / "proj")
    p = make(d)
    assert p.returncode == 0, p.stdout + p.stderr
    return d


def test_sources_untouched():
    for rel in SRC_FILES + ["VERSION"]:
        with open(os.path.join("/app", rel)) as fh, \
                open(os.path.join(os.path.dirname(__file__), "pristine", rel)) as ref:
            assert fh.read() == ref.read(), rel


def test_app_tree_builds_in_place():
    p = make("/app")
    assert p.returncode == 0, p.stdout + p.stderr
    assert run("/app/statcalc", "1 2 3\n") == reference("1 2 3\n")


@pytest.mark.parametrize("seed", range(3))
def test_output_matches_reference(built, seed):
    rng = random.Random(seed)
    for _ in range(15):
        text = gen_input(rng)
        assert run(built / "statcalc", text) == reference(text)


def test_version_flag(built):
    assert run(built / "statcalc", "", "--version") == "statcalc 2.4.1\n"


def test_parallel_clean_build(tmp_path):
    for attempt in range(3):
        d = fresh_copy(tmp_path / ("p%d" % attempt))
        p = make(d, "-j8")
        assert p.returncode == 0, p.stdout + p.stderr
        assert run(d / "statcalc", "4 5\n") == reference("4 5\n")


def test_header_change_rebuilds(tmp_path):
    d = fresh_copy(tmp_path / "h")
    assert make(d).returncode == 0
    cfg = d / "include/config.h"
    cfg.write_text(cfg.read_text().replace("#define STATS_PRECISION 3", "#define STATS_PRECISION 5"))
    p = make(d)
    assert p.returncode == 0, p.stderr
    assert run(d / "statcalc", "1 2 4\n") == reference("1 2 4\n", prec=5)


def test_version_change_rebuilds(tmp_path):
    d = fresh_copy(tmp_path / "v")
    assert make(d).returncode == 0
    (d / "VERSION").write_text("3.0.0-rc1\n")
    assert make(d).returncode == 0
    assert run(d / "statcalc", "", "--version") == "statcalc 3.0.0-rc1\n"


def test_up_to_date_after_build(tmp_path):
    d = fresh_copy(tmp_path / "q")
    assert make(d).returncode == 0
    p = make(d, "-q")
    assert p.returncode == 0, "make -q reports work left after a full build"
    # a .c change is picked up
    st = d / "src/stats.c"
    st.write_text(st.read_text().replace("out->min = values[0];", "out->min = values[0] - 1000.0;"))
    assert make(d, "-q").returncode != 0
    assert make(d).returncode == 0
    assert run(d / "statcalc", "5\n").startswith("count: 1\nmin: -995.000\n")


def test_clean_removes_artifacts(tmp_path):
    d = fresh_copy(tmp_path / "c")
    assert make(d).returncode == 0
    assert make(d, "clean").returncode == 0
    left = []
    for root, _, files in os.walk(d):
        for f in files:
            if f.endswith((".o", ".d")) or f in ("statcalc", "version.h"):
                left.append(os.path.join(root, f))
    assert not left, left
    assert make(d).returncode == 0
