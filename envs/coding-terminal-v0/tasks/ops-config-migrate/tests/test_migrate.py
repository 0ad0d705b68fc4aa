import json
import subprocess

import pytest

from migrate import migrate_config as mc

VALID = [
    ("a = 1\nb = hello\n", {"a": 1, "b": "hello"}),
    ("x = YES\ny = off\nz = True\nw = nope\n", {"x": True, "y": False, "z": True, "w": "nope"}),
    ("a = 0\nb = -12\nc = +7\nd = 007\ne = 0x1F\nf = 0x\ng = 1e3\n",
     {"a": 0, "b": -12, "c": 7, "d": "007", "e": 31, "f": "0x", "g": "1e3"}),
    ("a = 1.50\nb = -0.25\nc = 1.\nd = .5\ne = 1.2.3\n", {"a": 1.5, "b": -0.25, "c": "1.", "d": ".5", "e": "1.2.3"}),
    ("timeout = 30s\npoll = 250ms\nretention = 7d\nbackoff = 2m\ngrace = 1h\nlimit_ms = 5s\nbad = 5S\n",
     {"timeout_ms": 30000, "poll_ms": 250, "retention_ms": 604800000, "backoff_ms": 120000,
      "grace_ms": 3600000, "limit_ms": 5000, "bad": "5S"}),
    ("buf = 4KB\nmax = 2GB\nlow = 3kb\nmix = 10MB\n", {"buf": 4096, "max": 2147483648, "low": "3kb", "mix": 10485760}),
    ("a =\nb = \"\"\nc = ''\nd = \"  spaced  \"\n", {"a": None, "b": "", "c": "", "d": "  spaced  "}),
    ('a = "tab\\there"\nb = "line\\nnext"\nc = "q\\"uote \\\\ back"\nd = \'raw \\n \\t\'\n',
     {"a": "tab\there", "b": "line\nnext", "c": 'q"uote \\ back', "d": "raw \\n \\t"}),
    ("a = 5   # five\nb = text ; note\nc = http://x/#frag\nd = \"x # y\"  ; c\ne = don't panic # x\nf = # only\n",
     {"a": 5, "b": "text", "c": "http://x/#frag", "d": "x # y", "e": "don't panic", "f": None}),
    ("hosts = a, b ,c\nports = 80, 443, x\nmixed = \"a,b\", 'c, d', yes, 1.5, 30s\ntrail = a, \nsolo = ,\n",
     {"hosts": ["a", "b", "c"], "ports": [80, 443, "x"], "mixed": ["a,b", "c, d", True, 1.5, 30000],
      "trail": ["a"], "solo": []}),
    ("top = 1\n[server]\nport = 80\n[server.tls]\ncert = /x\n[ Server ]\nhost = h\n",
     {"top": 1, "server": {"port": 80, "tls": {"cert": "/x"}, "host": "h"}}),
    ("Listen-Port: 8080\n[Web-Front]\nMax-Conn = 5\nurl: http://a:80/x=1\n",
     {"listen_port": 8080, "web_front": {"max_conn": 5, "url": "http://a:80/x=1"}}),
    ("LogLevel = debug\n[DB]\nhost = a\n[database]\nport = 1\n[db.replica]\nhost = r\n[logging]\nlevel = warn\n",
     {"logging": {"level": "warn"}, "database": {"host": "a", "port": 1, "replica": {"host": "r"}}}),
    ("a = 1\na = 2\n[s]\nx[] = 1\nx[] = two\nx[] = a, b\nx[] =\nt[] = 5s\n",
     {"a": 2, "s": {"x": [1, "two", ["a", "b"], None], "t": [5000]}}),
    ("motd = hello \\\n      world\nc = 1\nl = one, \\\n    two,\\\n three\n",
     {"motd": "hello world", "c": 1, "l": ["one", "two", "three"]}),
    ("version = 1\nname = x\n", {"name": "x"}),
    ("# c\n; c\n   # indented\n\n[s] ; header comment\nk = v\n", {"s": {"k": "v"}}),
]

ERRORS = [
    ("a = 1\njust words\n", 2),
    ('a = 1\n\nb = "unterminated\n', 3),
    ('a = "bad \\q escape"\n', 1),
    ("a = 'x' trailing\n", 1),
    ("[bad name]\n", 1),
    ("[a]\nb = 1\n[a.b]\n", 3),
    ("[s]\nx = 1\nx[] = 2\n", 3),
    ("x[] = 1\nx = 2\n", 2),
    ("a = 1 \\\n  continued\nb c\n", 3),
    ("bad key! = 1\n", 1),
    ("[a.]\n", 1),
    ("[a]\nb.c = 1\n", 2),
    ("[a.b]\nx = 1\n[a]\nb = 2\n", 4),
]


def canon(obj):
    return json.dumps(obj, sort_keys=True)


@pytest.mark.parametrize("text,expected", VALID, ids=[f"valid{i}" for i in range(len(VALID))])
def test_valid(text, expected):
    got = mc.migrate(text)
    assert type(got) is dict
    assert canon(got) == canon(dict(expected, version=2))


@pytest.mark.parametrize("text,lineno", ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))])
def test_errors(text, lineno):
    with pytest.raises(mc.MigrationError) as ei:
        mc.migrate(text)
    assert type(ei.value.lineno) is int and ei.value.lineno == lineno
    assert str(ei.value).startswith(f"line {lineno}: ")


def run_cli(*args):
    return subprocess.run(["/usr/bin/python3", "/app/migrate/migrate_config.py", *map(str, args)],
                          capture_output=True, text=True, timeout=30)


def test_cli_output_format(tmp_path):
    src = tmp_path / "svc.conf"
    src.write_text("[b]\nz = 1\na = x, 2\n[a]\nt = 1s\n")
    r = run_cli(src, tmp_path / "svc.json")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "svc.json").read_text() == (
        '{\n  "a": {\n    "t_ms": 1000\n  },\n  "b": {\n    "a": [\n      "x",\n      2\n    ],\n'
        '    "z": 1\n  },\n  "version": 2\n}\n')


def test_cli_error(tmp_path):
    src = tmp_path / "bad.conf"
    src.write_text("[s]\nok = 1\n\nthis is not valid\n")
    r = run_cli(src, tmp_path / "bad.json")
    assert r.returncode == 1
    assert "line 4: " in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "bad.json").exists()


BILLING = {
    "cache": {"max_size": 536870912, "motd": "a long message that continues here", "ratio": 0.75,
              "ttl_ms": 3600000, "zip_prefix": "007"},
    "database": {"connect_timeout_ms": 1500, "host": "pg-billing.internal", "pool_size": 20, "port": 5432,
                 "replica": {"hosts": ["pg-r1.internal", "pg-r2.internal"], "max_lag_ms": 120000},
                 "url": "postgres://billing@pg-billing.internal/billing#primary"},
    "logging": {"level": "INFO"},
    "name": 'billing "eu"',
    "server": {"allowed_hosts": ["billing.internal", "10.0.0.5", "ops, on call"], "listen_port": 8443,
               "read_timeout_ms": 45000, "tls": True, "workers": 4},
    "version": 2,
}


def test_billing_migrated():
    with open("/app/configs/billing.json") as f:
        text = f.read()
    assert text == json.dumps(BILLING, indent=2, sort_keys=True) + "\n"
