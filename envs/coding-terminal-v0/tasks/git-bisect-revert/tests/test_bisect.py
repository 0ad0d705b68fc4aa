import functools
import random
import subprocess

import pytest

TIP = "120c25e05fe2e85b5ee63fd35a8f258b0e85537e"
BAD = "f782a744b02d8b8ecd37bffdd8792895bcc85b16"
GIT = "/usr/bin/git"
GOOD_BLOCK = '''    key = []
    for ident in ids:
        if ident.isdigit():
            # numeric identifiers compare numerically and sort before alphanumeric ones
            key.append((0, int(ident), ""))
        else:
            key.append((1, 0, ident))
    return (0, tuple(key))'''
BAD_BLOCK = '''    key = tuple((0 if ident.isdigit() else 1, ident) for ident in ids)
    return (0, key)'''


def git(*args):
    return subprocess.run([GIT, "-C", "/app", *args], capture_output=True, text=True, check=True).stdout.strip()


def ref_cmp(a, b):
    def key(v):
        v = v.strip().lstrip("vV").split("+")[0]
        core, _, pre = v.partition("-")
        nums = tuple(int(x) for x in core.split("."))
        if not pre:
            return nums + ((1,),)
        ids = tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in pre.split("."))
        return nums + ((0, ids),)
    ka, kb = key(a), key(b)
    return (ka > kb) - (ka < kb)


def test_first_bad_file():
    with open("/app/first_bad.txt") as f:
        assert f.read().strip() == BAD


def test_history_preserved_and_revert_on_top():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    subprocess.run([GIT, "-C", "/app", "merge-base", "--is-ancestor", TIP, "HEAD"], check=True)
    assert git("rev-parse", "HEAD") != TIP
    assert not git("for-each-ref", "refs/bisect")


def test_only_the_bad_commit_is_undone():
    changed = git("diff", "--name-only", TIP, "HEAD").split()
    assert "verlib.py" in changed
    assert all(p == "verlib.py" or p.startswith("tests/") for p in changed), changed
    tip_src = git("show", f"{TIP}:verlib.py")
    assert BAD_BLOCK in tip_src
    assert git("show", "HEAD:verlib.py") == tip_src.replace(BAD_BLOCK, GOOD_BLOCK)
    assert git("status", "--porcelain", "--untracked-files=no") == ""


def test_rc_ordering_fixed():
    import verlib
    r = verlib.compare("1.4.0-rc.10", "1.4.0-rc.9")
    assert type(r) is int and r == 1
    assert verlib.sort_versions(["1.0.0-rc.10", "1.0.0-rc.2", "1.0.0-rc.1", "1.0.0"]) == \
        ["1.0.0-rc.1", "1.0.0-rc.2", "1.0.0-rc.10", "1.0.0"]


@pytest.mark.parametrize("seed", [11, 12])
def test_randomized_compare(seed):
    import verlib
    rng = random.Random(seed)
    pool = ["alpha", "beta", "rc", "x-1", "2", "9", "10", "11", "100", "0"]
    def gen():
        v = f"{rng.randint(0, 2)}.{rng.randint(0, 2)}.{rng.randint(0, 12)}"
        if rng.random() < 0.7:
            v += "-" + ".".join(rng.choice(pool) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.2:
            v += "+b" + str(rng.randint(1, 9))
        return v
    for _ in range(400):
        a, b = gen(), gen()
        got = verlib.compare(a, b)
        assert type(got) is int and got == ref_cmp(a, b), (a, b)
    vs = [gen() for _ in range(60)]
    assert verlib.sort_versions(vs) == sorted(vs, key=functools.cmp_to_key(ref_cmp))


def test_later_features_still_work():
    import verlib
    assert verlib.next_prerelease("1.4.0-rc.9") == "1.4.0-rc.10"
    assert verlib.next_prerelease("1.4.0") == "1.4.1-rc.1"
    assert verlib.parse("v2.0.1")[:3] == (2, 0, 1)
    assert verlib.bump("1.2.3-rc.1", "patch") == "1.2.3"
    assert verlib.bump("1.2.3", "patch") == "1.2.4"
    assert verlib.max_version(["1.0.0-rc.9", "1.0.0-rc.10"]) == "1.0.0-rc.10"
    assert verlib.satisfies_min("1.0.0-rc.10", "1.0.0-rc.9") is True


def test_repo_suite_and_cli():
    r = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                       cwd="/app", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["/usr/bin/python3", "cli.py", "compare", "2.0.0-rc.10", "2.0.0-rc.2"],
                       cwd="/app", capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "1"
