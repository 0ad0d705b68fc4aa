import json
import random
import subprocess

import pytest

import dupes


def reference(records):
    by_key = {}
    for path, size, digest in records:
        by_key.setdefault((size, digest.lower()), set()).add(path)
    groups = [sorted(p) for p in by_key.values() if len(p) >= 2]
    groups.sort(key=lambda g: g[0])
    return groups


def canon(result):
    assert type(result) is list, type(result)
    out = []
    for g in result:
        assert type(g) is list, type(g)
        for p in g:
            assert type(p) is str, type(p)
        out.append([str(p) for p in g])
    return json.dumps(out)


def make_records(rng, n, n_keys, repeat_rate=0.05):
    keys = []
    for _ in range(n_keys):
        size = rng.choice([0, 1, 4096, rng.randrange(1, 10**9)])
        keys.append((size, "%040x" % rng.getrandbits(160)))
    recs = []
    paths = []
    for i in range(n):
        size, digest = rng.choice(keys)
        # same digest but different size is *not* a duplicate
        if rng.random() < 0.03:
            size += 1
        if rng.random() < 0.3:
            digest = digest.upper()
        d = "/".join(rng.choice(["srv", "home", "var", "data", "mnt", "x"]) for _ in range(rng.randrange(1, 4)))
        path = "/%s/f%07d_%d.bin" % (d, rng.randrange(10**7), i)
        recs.append((path, size, digest))
        paths.append((path, size, digest))
        if rng.random() < repeat_rate and paths:
            p, s, h = rng.choice(paths)
            recs.append((p, s, h.upper() if rng.random() < 0.5 else h.lower()))
    rng.shuffle(recs)
    return recs


@pytest.mark.parametrize("seed", range(6))
def test_matches_reference_small(seed):
    rng = random.Random(1000 + seed)
    recs = make_records(rng, rng.randrange(50, 400), rng.randrange(5, 120))
    got = dupes.find_duplicate_groups(list(recs))
    assert canon(got) == json.dumps(reference(recs))


def test_edge_cases():
    assert canon(dupes.find_duplicate_groups([])) == "[]"
    recs = [("/b", 5, "AA"), ("/a", 5, "aa"), ("/a", 5, "aa"), ("/c", 6, "aa"),
            ("/d", 6, "AA"), ("/e", 7, "bb"), ("/e", 7, "BB"), ("/z", 0, "ff"), ("/y", 0, "FF")]
    assert canon(dupes.find_duplicate_groups(iter(recs))) == json.dumps(
        [["/a", "/b"], ["/c", "/d"], ["/y", "/z"]])


def test_cli(tmp_path):
    rng = random.Random(77)
    recs = make_records(rng, 300, 40)
    cat = tmp_path / "cat.tsv"
    cat.write_text("".join("%s\t%d\t%s\n" % r for r in recs))
    out = subprocess.run(["/usr/bin/python3", "/app/dupes.py", str(cat)], capture_output=True,
                         text=True, timeout=60, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    expected = "".join("\t".join(g) + "\n" for g in reference(recs))
    assert out.stdout == expected


RUNNER = r"""
import json, sys
sys.path.append('/app')
import dupes
recs = [tuple(r) for r in json.load(open(sys.argv[1]))]
res = dupes.find_duplicate_groups(recs)
assert type(res) is list
out = []
for g in res:
    assert type(g) is list
    assert all(type(p) is str for p in g)
    out.append([str(p) for p in g])
json.dump(out, open(sys.argv[2], 'w'))
"""


def test_large_input_fast(tmp_path):
    rng = random.Random(4242)
    recs = make_records(rng, 150_000, 30_000)
    inp = tmp_path / "in.json"
    inp.write_text(json.dumps(recs))
    outp = tmp_path / "out.json"
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    try:
        p = subprocess.run(["/usr/bin/python3", "-I", str(runner), str(inp), str(outp)],
                           capture_output=True, text=True, timeout=20, cwd=str(tmp_path))
    except subprocess.TimeoutExpired:
        pytest.fail("find_duplicate_groups took more than 20 s on 150k records")
    assert p.returncode == 0, p.stderr[-2000:]
    assert outp.read_text() == json.dumps(reference(recs))
