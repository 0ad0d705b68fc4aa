import json
import random
import re
import textwrap

import pytest

import confparse
from confparse import parse, load, ParseError, InterpolationError


def S(x):
    assert type(x) is str
    return x


SAMPLE = textwrap.dedent("""\
    # deploy settings
    ; another comment
    [DEFAULT]
    user = deploy
    url = https://${host}:${port}/
    port = 443
    retries = 3

    [prod]
    host = prod.example.com
    port = 8443
    hosts = a.example.com,
        b.example.com ,
        # not a comment
    debug = off

    [ staging ]
    host = stage.internal
    home = /home/${user}
    price = $$5 and $HOME and $
    backup = ${prod:host}
    ratio = 0.25
    enabled = Yes
""")


# ---------------- parsing ----------------

def test_sections_keys_and_raw():
    cfg = parse(SAMPLE)
    assert json.dumps(cfg.sections()) == json.dumps(["prod", "staging"])
    assert json.dumps(cfg.keys("prod")) == json.dumps(["host", "port", "hosts", "debug", "user", "url", "retries"])
    assert json.dumps(cfg.keys("staging")) == json.dumps(
        ["host", "home", "price", "backup", "ratio", "enabled", "user", "url", "port", "retries"])
    assert S(cfg.raw("prod", "hosts")) == "a.example.com,\nb.example.com ,\n# not a comment"
    assert S(cfg.raw("staging", "url")) == "https://${host}:${port}/"
    with pytest.raises(KeyError):
        cfg.keys("nope")


def test_default_section_interpolates_in_reader_context():
    cfg = parse(SAMPLE)
    assert S(cfg.get("prod", "url")) == "https://prod.example.com:8443/"
    assert S(cfg.get("staging", "url")) == "https://stage.internal:443/"
    assert S(cfg.get("staging", "home")) == "/home/deploy"
    assert S(cfg.get("staging", "backup")) == "prod.example.com"
    assert S(cfg.get("staging", "price")) == "$5 and $HOME and $"
    with pytest.raises(InterpolationError):
        cfg.get("DEFAULT", "url")


def test_typed_getters_and_fallbacks():
    cfg = parse(SAMPLE)
    v = cfg.getint("prod", "port")
    assert type(v) is int and v == 8443
    v = cfg.getint("staging", "retries")
    assert type(v) is int and v == 3
    v = cfg.getfloat("staging", "ratio")
    assert type(v) is float and v == 0.25
    assert cfg.getbool("staging", "enabled") is True and cfg.getbool("prod", "debug") is False
    assert json.dumps(cfg.getlist("prod", "hosts")) == json.dumps(["a.example.com", "b.example.com", "# not a comment"])
    marker = object()
    assert cfg.get("prod", "missing", fallback=marker) is marker
    assert cfg.getint("nosection", "x", fallback=marker) is marker
    assert cfg.get("prod", "missing", "${not interpolated}") == "${not interpolated}"
    with pytest.raises(KeyError):
        cfg.get("prod", "missing")
    with pytest.raises(KeyError):
        cfg.raw("nosuch", "host")
    with pytest.raises(ValueError):
        cfg.getbool("prod", "host")
    with pytest.raises(ValueError):
        cfg.getint("prod", "host")


def test_to_dict():
    cfg = parse("[a]\nx = 1\ny = ${x}${x}\n[DEFAULT]\nz = ${y}!\n[b]\ny = B\n")
    assert json.dumps(cfg.to_dict()) == json.dumps({"a": {"x": "1", "y": "11", "z": "11!"}, "b": {"y": "B", "z": "B!"}})


def test_repeated_key_keeps_position_and_continuation():
    cfg = parse("[s]\na = 1\nb = 2\na = 3\n  more\n\tand more\n")
    assert cfg.keys("s") == ["a", "b"]
    assert cfg.get("s", "a") == "3\nmore\nand more"
    assert cfg.get("s", "b") == "2"


def test_equals_in_value_and_whitespace():
    cfg = parse("[s]\nurl=  a=b=c  \nempty =\n")
    assert cfg.get("s", "url") == "a=b=c"
    assert cfg.get("s", "empty") == ""
    assert cfg.getlist("s", "empty") == []


@pytest.mark.parametrize("text,lineno", [
    ("key = 1\n", 1),
    ("[a]\nx = 1\n[a]\n", 3),
    ("# c\n[a]\njunk line\n", 3),
    ("[a]\n  continuation\n", 2),
    ("  leading\n", 1),
    ("[a b]\n", 1),
    ("[a]\nbad key = 1\n", 2),
    ("[a]\n= 1\n", 2),
    ("\n\n[a\n", 3),
    ("[]\n", 1),
])
def test_parse_errors(text, lineno):
    with pytest.raises(ParseError) as ei:
        parse(text)
    assert isinstance(ei.value, ValueError)
    assert type(ei.value.lineno) is int and ei.value.lineno == lineno


def test_load_utf8(tmp_path):
    p = tmp_path / "c.ini"
    p.write_bytes("[s]\nname = Zoë ${x}\nx = ✓\n".encode("utf-8"))
    assert load(str(p)).get("s", "name") == "Zoë ✓"


# ---------------- interpolation errors ----------------

@pytest.mark.parametrize("value", ["${", "abc ${x", "${}", "${a:b:c}", "${a b}", "${:x}", "${s:}", "${missing}",
                                   "${nosec:x}", "${self}", "${s:self}", "${loop1}", "${ok}${bad:}"])
def test_interpolation_errors(value):
    cfg = parse(f"[s]\nself = {value}\nok = fine\nloop1 = ${{loop2}}\nloop2 = x${{s:loop1}}\n")
    assert cfg.raw("s", "self") == value
    with pytest.raises(InterpolationError):
        cfg.get("s", "self")
    assert cfg.get("s", "ok") == "fine"


def test_cycle_through_default_context():
    cfg = parse("[DEFAULT]\na = ${b}\n[x]\nb = ${a}\n[y]\nb = plain\n")
    with pytest.raises(InterpolationError):
        cfg.get("x", "a")
    assert cfg.get("y", "a") == "plain"


def test_deep_chains_and_long_cycles():
    n = 4000
    lines = ["[c]"] + [f"k{i} = ${{k{i + 1}}}." for i in range(n)] + [f"k{n} = end"]
    cfg = parse("\n".join(lines) + "\n")
    assert cfg.get("c", "k0") == "end" + "." * n
    lines[-1] = f"k{n} = ${{c:k0}}"
    cfg = parse("\n".join(lines) + "\n")
    with pytest.raises(InterpolationError):
        cfg.get("c", "k7")


# ---------------- randomized against an independent resolver ----------------

class RefErr(Exception):
    pass


def ref_get(data, sec, key, stack=()):
    if sec not in data:
        raise RefErr
    raw = data[sec].get(key, data.get("DEFAULT", {}).get(key))
    if raw is None:
        raise RefErr
    if (sec, key) in stack:
        raise RefErr
    out = []
    for tok in re.findall(r"\$\$|\$\{[^}]*\}|\$\{.*|\$|[^$]+", raw):
        if tok == "$$":
            out.append("$")
        elif tok.startswith("${"):
            if not tok.endswith("}"):
                raise RefErr
            parts = tok[2:-1].split(":")
            if len(parts) > 2 or not all(re.fullmatch(r"[A-Za-z0-9_.-]+", p) for p in parts):
                raise RefErr
            s2, k2 = (sec, parts[0]) if len(parts) == 1 else parts
            out.append(ref_get(data, s2, k2, stack + ((sec, key),)))
        else:
            out.append(tok)
    return "".join(out)


def random_config(rng):
    sections = ["DEFAULT"] * (rng.random() < 0.7) + [f"s{i}" for i in range(rng.randint(1, 4))]
    data = {}
    for sec in sections:
        data[sec] = {}
        for k in rng.sample(range(6), rng.randint(1, 5)):
            parts = []
            for _ in range(rng.randint(0, 3)):
                r = rng.random()
                if r < 0.3:
                    parts.append(f"${{k{rng.randrange(7)}}}")
                elif r < 0.5:
                    parts.append(f"${{{rng.choice(sections + ['zz'])}:k{rng.randrange(7)}}}")
                elif r < 0.6:
                    parts.append(rng.choice(["$$", "$", "$x", "${", "${a:b:c}", "$${k1}"]))
                else:
                    parts.append(rng.choice(["a", "/", "-", "word", " ", "1.5"]))
            data[sec][f"k{k}"] = "".join(parts).strip() or "v"
    text = ""
    for sec, kv in data.items():
        text += f"[{sec}]\n" + "".join(f"k{k[1:]} = {v}\n" for k, v in kv.items()) + "\n"
    return data, text


@pytest.mark.parametrize("seed", range(8))
def test_random_configs_match_reference(seed):
    rng = random.Random(seed)
    for _ in range(120):
        data, text = random_config(rng)
        cfg = parse(text)
        for sec in list(data) + ["zz"]:
            for k in range(7):
                key = f"k{k}"
                if sec not in data or (key not in data[sec] and key not in data.get("DEFAULT", {})):
                    with pytest.raises(KeyError):
                        cfg.get(sec, key)
                    continue
                try:
                    expected = ("ok", ref_get(data, sec, key))
                except RefErr:
                    expected = ("err",)
                try:
                    got = ("ok", S(cfg.get(sec, key)))
                except InterpolationError:
                    got = ("err",)
                assert json.dumps(got) == json.dumps(expected), (text, sec, key)
