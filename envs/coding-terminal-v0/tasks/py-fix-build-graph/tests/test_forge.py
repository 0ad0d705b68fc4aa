import json
import os
import random
import subprocess
import textwrap

import pytest

import forge
from forge import parse, plan, CycleError, ParseError, Builder, fingerprint

CLI = "import sys; sys.path.insert(0, '/app'); from forge.cli import main; sys.exit(main(sys.argv[1:]))"


def J(x):
    return json.dumps(x)


def run_cli(cwd, *args, seed="0"):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONHASHSEED": seed}
    p = subprocess.run(["/usr/bin/python3", "-c", CLI, *args], cwd=str(cwd), env=env,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


# --- reference semantics, written independently ---

class RefCycle(Exception):
    def __init__(self, cycle):
        self.cycle = cycle


def ref_toposort(targets, roots=None):
    order, state, path = [], {}, []

    def visit(n):
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            raise RefCycle(path[path.index(n):] + [n])
        state[n] = 1
        path.append(n)
        for d in targets[n]:
            if d in targets:
                visit(d)
        path.pop()
        state[n] = 2
        order.append(n)

    for r in (sorted(targets) if roots is None else roots):
        visit(r)
    return order


def ref_plan(targets, changed):
    dirty = {c for c in changed if c in targets}
    frontier = set(changed)
    while frontier:
        new = {t for t, deps in targets.items() if frontier & set(deps)} - dirty
        dirty |= new
        frontier = new
    return [n for n in ref_toposort(targets) if n in dirty]


def forgefile(targets, commands=None):
    lines = []
    for name, deps in targets.items():
        lines.append(f"{name}: {' '.join(deps)}")
        for c in (commands or {}).get(name, []):
            lines.append(f"    {c}")
    return "\n".join(lines) + "\n"


def random_graph(rng, n, cyclic):
    names = [f"t{i:02d}" for i in range(n)]
    rng.shuffle(names)
    targets = {}
    for i, name in enumerate(names):
        pool = names[:i] + [f"src/{k}.c" for k in range(5)]
        targets[name] = rng.sample(pool, min(len(pool), rng.randint(0, 4)))
    if cyclic:
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(n)
            j = rng.randrange(i, n)
            targets[names[i]].append(names[j])
    keys = list(targets)
    rng.shuffle(keys)
    return {k: targets[k] for k in keys}


# ---------------- FAIL_TO_PASS ----------------

def test_three_cycle():
    g = parse("a: b\nb: c\nc: a\n")
    with pytest.raises(CycleError) as ei:
        g.toposort()
    assert J(ei.value.cycle) == J(["a", "b", "c", "a"])
    assert isinstance(ei.value, forge.ForgeError)


def test_self_dependency():
    g = parse("all: lib\nlib: lib.c lib\n    cc lib.c\n")
    with pytest.raises(CycleError) as ei:
        g.toposort()
    assert J(ei.value.cycle) == J(["lib", "lib"])


def test_cycle_found_from_later_root():
    g = parse("all: x\nx: x.c\np: q\nq: r s\nr: s\ns: q\n")
    with pytest.raises(CycleError) as ei:
        g.toposort()
    assert J(ei.value.cycle) == J(["q", "r", "s", "q"])
    assert J(g.toposort(["all"])) == J(["x", "all"])


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_match_reference(seed):
    rng = random.Random(seed)
    for _ in range(40):
        targets = random_graph(rng, rng.randint(1, 25), cyclic=rng.random() < 0.5)
        g = parse(forgefile(targets))
        try:
            expected = ("order", ref_toposort(targets))
        except RefCycle as c:
            expected = ("cycle", c.cycle)
        try:
            got = ("order", g.toposort())
        except CycleError as c:
            got = ("cycle", c.cycle)
        assert J(got) == J(expected), targets
        if expected[0] == "order":
            changed = rng.sample(sorted(set(targets) | {f"src/{k}.c" for k in range(5)}), 2)
            assert J(plan(g, changed)) == J(ref_plan(targets, changed)), (targets, changed)


def test_plan_is_transitive():
    g = parse("app: main.o util.o\nmain.o: main.c config.h\nutil.o: util.c\nconfig.h: config.h.in\n"
              "docs: README\ntest: app\n")
    assert J(plan(g, ["config.h.in"])) == J(["config.h", "main.o", "app", "test"])
    assert J(plan(g, ["util.c", "README"])) == J(["util.o", "app", "docs", "test"])


def test_huge_chain_in_subprocess(tmp_path):
    script = textwrap.dedent('''
        import sys, time, json
        sys.path.insert(0, "/app")
        from forge import parse, plan, CycleError
        N = 50000
        text = "".join(f"t{i}: t{i+1}\\n" for i in range(N)) + f"t{N}: src.c\\n"
        t0 = time.perf_counter()
        g = parse(text)
        order = g.toposort()
        p = plan(g, ["src.c"])
        ok_order = order == [f"t{i}" for i in range(N, -1, -1)] and p == order
        try:
            g3 = parse("".join(f"t{i}: t{i+1}\\n" for i in range(N)) + f"t{N}: t7\\n")
            g3.toposort()
            cyc = None
        except CycleError as e:
            cyc = e.cycle
        ok_cycle = cyc == [f"t{i}" for i in range(7, N + 1)] + ["t7"]
        print(json.dumps([ok_order, ok_cycle, time.perf_counter() - t0 < 20]))
    ''')
    (tmp_path / "big.py").write_text(script)
    p = subprocess.run(["/usr/bin/python3", "-I", str(tmp_path / "big.py")], capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[true, true, true]"


def test_fingerprint_stable_across_processes(tmp_path):
    code = ("import sys; sys.path.insert(0, '/app'); from forge import fingerprint; "
            "print(fingerprint(['cc -c a.c', 'ar r x.a'], [b'int main;', b'\\x00\\xff'], ['ab12']))")
    outs = set()
    for seed in ("1", "2", "3"):
        p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": seed})
        assert p.returncode == 0, p.stderr
        outs.add(p.stdout.strip())
    assert len(outs) == 1
    fp = outs.pop()
    assert fp == fp.lower() and all(c in "0123456789abcdef" for c in fp) and len(fp) >= 16


def test_fingerprint_distinguishes_inputs():
    cases = [
        (["ab"], [], []), (["a", "b"], [], []), ([], [b"ab"], []), ([], [b"a", b"b"], []), ([], [], ["ab"]),
        (["a"], [b"b"], []), (["a", ""], [], []), ([""], [], []), ([], [], []), ([], [b""], []),
    ]
    fps = [fingerprint(*c) for c in cases]
    assert all(type(f) is str for f in fps)
    assert len(set(fps)) == len(cases)


def test_cli_second_run_is_up_to_date(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    (tmp_path / "Forgefile").write_text(
        "out.txt: mid.txt\n    cat mid.txt mid.txt > out.txt\nmid.txt: a.txt\n    tr a-z A-Z < a.txt > mid.txt\n")
    assert run_cli(tmp_path, seed="11") == (0, "built mid.txt\nbuilt out.txt\n", "")
    assert run_cli(tmp_path, seed="12") == (0, "up to date\n", "")
    (tmp_path / "a.txt").write_text("bye\n")
    assert run_cli(tmp_path, "out.txt", seed="13") == (0, "built mid.txt\nbuilt out.txt\n", "")
    assert (tmp_path / "out.txt").read_text() == "BYE\nBYE\n"
    assert run_cli(tmp_path, "mid.txt", seed="14") == (0, "up to date\n", "")


def test_cli_reports_cycle(tmp_path):
    (tmp_path / "Forgefile").write_text("all: a\na: b\n    touch a\nb: c\nc: a\n")
    assert run_cli(tmp_path) == (2, "", "forge: dependency cycle: a -> b -> c -> a\n")
    assert not (tmp_path / "a").exists()


# ---------------- PASS_TO_PASS ----------------

def test_parse_and_order():
    g = parse(textwrap.dedent("""\
        # build everything
        all: app docs

        app: main.o util.o
        \tcc -o app main.o util.o
        main.o: main.c util.h
            cc -c main.c
        util.o: util.c util.h
            cc -c util.c
        docs: README
            echo docs
    """))
    assert J(g.toposort()) == J(["main.o", "util.o", "app", "docs", "all"])
    assert J(g.toposort(["util.o", "app"])) == J(["util.o", "main.o", "app"])
    assert g.targets["app"].commands == ("cc -o app main.o util.o",)
    assert g.targets["main.o"].deps == ("main.c", "util.h")
    with pytest.raises(KeyError):
        g.toposort(["nope"])


@pytest.mark.parametrize("text", ["    echo hi\n", "a b c\n", "a: b\na: c\n", "a b: c\n", "a: b$\n"])
def test_parse_errors(text):
    with pytest.raises(ParseError):
        parse(text)


def test_plan_direct():
    g = parse("app: main.o\nmain.o: main.c\nlib: lib.c\n")
    assert J(plan(g, ["main.o"])) == J(["main.o", "app"])
    assert J(plan(g, ["lib"])) == J(["lib"])
    assert J(plan(g, [])) == J([])
    assert J(plan(g, ["unrelated.c"])) == J([])


def test_builder_in_process(tmp_path):
    (tmp_path / "x.c").write_text("x")
    g = parse("bin: x.o\n    link\nx.o: x.c\n    compile\n")
    calls = []
    runner = lambda cmd, cwd: calls.append(cmd) or 0
    assert J(Builder(g, str(tmp_path), runner).build("bin")) == J(["x.o", "bin"])
    assert J(Builder(g, str(tmp_path), runner).build("bin")) == J([])
    assert calls == ["compile", "link"]
    (tmp_path / "x.c").write_text("y")
    assert J(Builder(g, str(tmp_path), runner).build("bin")) == J(["x.o", "bin"])
    state = json.loads((tmp_path / ".forge-state.json").read_text())
    assert sorted(state) == ["bin", "x.o"]


def test_cli_errors(tmp_path):
    assert run_cli(tmp_path) == (2, "", "forge: no Forgefile\n")
    (tmp_path / "Forgefile").write_text("app: main.c\n    true\n")
    assert run_cli(tmp_path, "zzz") == (2, "", "forge: unknown target: zzz\n")
    assert run_cli(tmp_path) == (2, "", "forge: missing source: main.c\n")
    (tmp_path / "main.c").write_text("")
    (tmp_path / "Forgefile").write_text("app: main.c\n    false\n")
    assert run_cli(tmp_path) == (2, "", "forge: command failed in app\n")


def test_cli_first_build(tmp_path):
    (tmp_path / "in.txt").write_text("1\n")
    (tmp_path / "Forgefile").write_text("copy.txt: in.txt\n    cp in.txt copy.txt\n")
    assert run_cli(tmp_path) == (0, "built copy.txt\n", "")
    assert (tmp_path / "copy.txt").read_text() == "1\n"
