import os
import random
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE = "/usr/bin/make"
GCC = "/usr/bin/gcc"


class Model:
    def __init__(self, cap):
        self.cap = cap
        self.d = bytearray()

    def write(self, data):
        n = min(len(data), self.cap - len(self.d))
        self.d += data[:n]
        return n

    def overwrite(self, data):
        n = len(data)
        if n >= self.cap:
            dropped = len(self.d) + n - self.cap
            self.d = bytearray(data[n - self.cap:])
            return dropped
        excess = max(0, len(self.d) + n - self.cap)
        del self.d[:excess]
        self.d += data
        return excess

    def read(self, n):
        out = bytes(self.d[:n])
        del self.d[:n]
        return out

    def peek(self, off, n):
        if off >= len(self.d):
            return b""
        return bytes(self.d[off:off + n])

    def find(self, byte, frm):
        if frm >= len(self.d):
            return -1
        return self.d.find(bytes([byte]), frm)

    def read_line(self, outsz):
        i = self.d.find(b"\n")
        if i < 0:
            return -1, None
        L = i + 1
        if L >= outsz:
            return -2, None
        out = bytes(self.d[:L])
        del self.d[:L]
        return L, out

    def resize(self, cap):
        if cap == 0 or cap < len(self.d):
            return -1
        self.cap = cap
        return 0


def hx(b):
    return b.hex() if b else "-"


def gen_script(rng, n_ops):
    cmds, exp = [], []
    cap = rng.choice([1, 2, 3, 5, 7, 8, 16, 31, 64, 100, 257, rng.randrange(1, 4000)])
    cmds.append("new %d" % cap)
    exp.append("ok")
    m = Model(cap)
    nl_heavy = rng.random() < 0.5
    for _ in range(n_ops):
        r = rng.random()
        maxlen = max(1, int(m.cap * rng.choice([0.3, 1, 1.5, 2.5])))
        if r < 0.22 or r < 0.34:
            k = rng.randrange(0, maxlen + 1)
            if nl_heavy:
                data = bytes(rng.choice(b"ab\n\x00\xff") for _ in range(k))
            else:
                data = bytes(rng.randrange(256) for _ in range(k))
            if r < 0.22:
                cmds.append("w " + hx(data)); exp.append(str(m.write(data)))
            else:
                cmds.append("o " + hx(data)); exp.append(str(m.overwrite(data)))
        elif r < 0.46:
            k = rng.randrange(0, maxlen + 1)
            out = m.read(k)
            cmds.append("r %d" % k); exp.append("%d %s" % (len(out), hx(out)))
        elif r < 0.52:
            k = rng.randrange(0, maxlen + 1)
            cmds.append("d %d" % k); exp.append(str(len(m.read(k))))
        elif r < 0.64:
            off = rng.randrange(0, m.cap + 3)
            k = rng.randrange(0, maxlen + 1)
            out = m.peek(off, k)
            cmds.append("p %d %d" % (off, k)); exp.append("%d %s" % (len(out), hx(out)))
        elif r < 0.74:
            byte = rng.choice([10, 0, 255, ord("a"), rng.randrange(256)])
            frm = rng.randrange(0, m.cap + 2)
            cmds.append("f %d %d" % (byte, frm)); exp.append(str(m.find(byte, frm)))
        elif r < 0.86:
            outsz = rng.choice([0, 1, 2, rng.randrange(0, m.cap + 3)])
            ret, out = m.read_line(outsz)
            cmds.append("l %d" % outsz)
            exp.append("%d" % ret if ret < 0 else "%d %s 1" % (ret, hx(out)))
        elif r < 0.93:
            newcap = rng.choice([0, len(m.d), len(m.d) + 1, max(0, len(m.d) - 1),
                                 rng.randrange(1, 2 * m.cap + 3)])
            cmds.append("z %d" % newcap); exp.append(str(m.resize(newcap)))
        else:
            cmds.append("s"); exp.append("%d %d %d" % (len(m.d), m.cap - len(m.d), m.cap))
    return "\n".join(cmds) + "\n", "\n".join(exp) + "\n"


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("rb")
    proj = d / "proj"
    shutil.copytree("/app", proj, symlinks=True)
    subprocess.run([MAKE, "-C", str(proj), "clean"], capture_output=True, timeout=60)
    p = subprocess.run([MAKE, "-C", str(proj)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    inc = d / "inc"
    inc.mkdir()
    shutil.copy(os.path.join(HERE, "pristine", "ringbuf.h"), inc / "ringbuf.h")
    p = subprocess.run([GCC, "-O1", "-I", str(inc), os.path.join(HERE, "driver.c"),
                        str(proj / "libringbuf.a"), "-o", str(d / "drv")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([GCC, "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                        "-I", str(inc), os.path.join(HERE, "driver.c"), str(proj / "src" / "ringbuf.c"),
                        "-o", str(d / "drv_asan")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return d


def run_drv(binary, script):
    env = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "PATH": "/usr/bin:/bin"}
    p = subprocess.run([str(binary)], input=script, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def test_header_unchanged():
    with open("/app/include/ringbuf.h") as a, open(os.path.join(HERE, "pristine", "ringbuf.h")) as b:
        assert a.read() == b.read()


def test_constructor_and_getters(build_dir):
    out = run_drv(build_dir / "drv", "new 0\nnew 5\ns\n")
    assert out == "null\nok\n0 5 5\n"


@pytest.mark.parametrize("seed", range(7))
def test_random_operations(build_dir, seed):
    rng = random.Random(seed)
    scripts = [gen_script(rng, rng.randrange(20, 400)) for _ in range(25)]
    script = "".join(s for s, _ in scripts)
    expected = "".join(e for _, e in scripts)
    got = run_drv(build_dir / "drv", script)
    assert got.splitlines() == expected.splitlines()


@pytest.mark.parametrize("seed", range(3))
def test_random_operations_under_sanitizers(build_dir, seed):
    rng = random.Random(100 + seed)
    scripts = [gen_script(rng, rng.randrange(20, 300)) for _ in range(15)]
    script = "".join(s for s, _ in scripts)
    expected = "".join(e for _, e in scripts)
    got = run_drv(build_dir / "drv_asan", script)
    assert got.splitlines() == expected.splitlines()
