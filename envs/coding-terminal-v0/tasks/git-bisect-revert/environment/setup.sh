#!/bin/bash
# Builds /app as a git repo with ~22 commits of a semver helper library; tag v1.2.0 is known good.
set -euo pipefail
cd /app
export GIT_AUTHOR_NAME="Ravi Okafor" GIT_AUTHOR_EMAIL="ravi@relkit.example"
export GIT_COMMITTER_NAME="Ravi Okafor" GIT_COMMITTER_EMAIL="ravi@relkit.example"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
git init -q -b main .
git config user.name "Agent" && git config user.email "agent@relkit.example"
python3 - <<'PY'
import os, subprocess

t = [1706000000]


def commit(msg):
    t[0] += 7211
    env = dict(os.environ, GIT_AUTHOR_DATE=f"@{t[0]} +0000", GIT_COMMITTER_DATE=f"@{t[0]} +0000")
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", msg], check=True, env=env)


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def edit(path, old, new):
    src = open(path).read()
    assert src.count(old) == 1, (path, old)
    write(path, src.replace(old, new))


write(".gitignore", "__pycache__/\n.pytest_cache/\n")
write("verlib.py", '''"""Semantic version helpers used by the release tooling."""
import re

_RE = re.compile(
    r"^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*))?"
    r"(?:\\+([0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*))?$"
)


def parse(text):
    """Split a version string into (major, minor, patch, prerelease_ids, build)."""
    m = _RE.match(text.strip())
    if not m:
        raise ValueError(f"not a semantic version: {text!r}")
    major, minor, patch, pre, build = m.groups()
    pre_ids = tuple(pre.split(".")) if pre else ()
    return int(major), int(minor), int(patch), pre_ids, build or ""


def _pre_key(ids):
    # A release sorts after every prerelease of the same version.
    if not ids:
        return (1,)
    key = []
    for ident in ids:
        if ident.isdigit():
            # numeric identifiers compare numerically and sort before alphanumeric ones
            key.append((0, int(ident), ""))
        else:
            key.append((1, 0, ident))
    return (0, tuple(key))


def sort_key(text):
    """Key usable with sorted(); build metadata is ignored."""
    major, minor, patch, pre, _build = parse(text)
    return (major, minor, patch, _pre_key(pre))


def compare(a, b):
    """-1, 0 or 1 as version a is lower than, equal to or higher than version b."""
    ka, kb = sort_key(a), sort_key(b)
    return (ka > kb) - (ka < kb)
''')
write("README.md", "# verlib\n\nSemantic version parsing and ordering for the release scripts.\n")
write("tests/test_verlib.py", '''import verlib


def test_parse():
    assert verlib.parse("1.2.3-beta.1+build.5") == (1, 2, 3, ("beta", "1"), "build.5")


def test_compare_basic():
    assert verlib.compare("1.0.0", "2.0.0") == -1
    assert verlib.compare("1.0.0-alpha", "1.0.0") == -1
    assert verlib.compare("1.0.0+a", "1.0.0+b") == 0
''')
commit("Initial version helpers")

append("verlib.py", '''

def bump(text, part):
    """Return the next version after text, bumping 'major', 'minor' or 'patch'."""
    major, minor, patch, _pre, _build = parse(text)
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    if part == "patch":
        return f"{major}.{minor}.{patch + 1}"
    raise ValueError(f"unknown part: {part!r}")
''')
commit("Add bump()")
append("README.md", "\n## Usage\n\n    >>> import verlib\n    >>> verlib.compare('1.2.0', '1.10.0')\n    -1\n")
commit("Document basic usage")
append("verlib.py", '''

def sort_versions(versions, reverse=False):
    """Sort version strings by precedence."""
    return sorted(versions, key=sort_key, reverse=reverse)
''')
commit("Add sort_versions()")
write("cli.py", '''"""Command line entry point: python3 cli.py compare A B | sort V..."""
import sys

import verlib


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "compare":
        print(verlib.compare(args[0], args[1]))
    elif cmd == "sort":
        print("\\n".join(verlib.sort_versions(args)))
    else:
        print(f"unknown command: {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
''')
commit("Add command line interface")
write("CHANGELOG.md", "# Changelog\n\n## 1.2.0\n- compare, sort_versions, bump, CLI\n")
commit("Changelog for 1.2.0")
subprocess.run(["git", "tag", "v1.2.0"], check=True)

append("verlib.py", '''

def is_prerelease(text):
    """True when text carries a prerelease tag such as -rc.1."""
    return bool(parse(text)[3])
''')
commit("Add is_prerelease()")
edit("README.md", "Semantic version parsing and ordering for the release scripts.",
     "Semantic version parsing and ordering for the release scripts (SemVer 2.0.0).")
commit("README: mention the spec version")
append("verlib.py", '''

def max_version(versions):
    """Highest version in an iterable of version strings."""
    return max(versions, key=sort_key)
''')
commit("Add max_version()")
edit("cli.py", '''    elif cmd == "sort":''', '''    elif cmd == "max":
        print(verlib.max_version(args))
    elif cmd == "sort":''')
commit("cli: add max command")
append("tests/test_verlib.py", '''

def test_bump():
    assert verlib.bump("1.2.3", "minor") == "1.3.0"
    assert verlib.bump("1.2.3", "major") == "2.0.0"
''')
commit("Test bump()")
append("verlib.py", '''

def satisfies_min(text, minimum):
    """True when version text is at least minimum."""
    return compare(text, minimum) >= 0
''')
commit("Add satisfies_min()")
edit("cli.py", '''def main(argv):
    cmd, args = argv[0], argv[1:]''', '''def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr
        return 2
    cmd, args = argv[0], argv[1:]''')
commit("WIP cli usage message")
edit("cli.py", "print(__doc__, file=sys.stderr\n", "print(__doc__, file=sys.stderr)\n")
commit("Fix cli usage message")
edit("verlib.py", '''    key = []
    for ident in ids:
        if ident.isdigit():
            # numeric identifiers compare numerically and sort before alphanumeric ones
            key.append((0, int(ident), ""))
        else:
            key.append((1, 0, ident))
    return (0, tuple(key))''', '''    key = tuple((0 if ident.isdigit() else 1, ident) for ident in ids)
    return (0, key)''')
commit("Simplify prerelease identifier key")
append("README.md", "\n    >>> verlib.sort_versions(['1.0.0', '1.0.0-rc.1', '0.9.0'])\n    ['0.9.0', '1.0.0-rc.1', '1.0.0']\n")
commit("README: sorting example")
append("verlib.py", '''

def next_prerelease(text, label="rc"):
    """1.4.0-rc.3 -> 1.4.0-rc.4; 1.4.0 -> 1.4.1-rc.1."""
    major, minor, patch, pre, _build = parse(text)
    if len(pre) == 2 and pre[0] == label and pre[1].isdigit():
        return f"{major}.{minor}.{patch}-{label}.{int(pre[1]) + 1}"
    if not pre:
        return f"{major}.{minor}.{patch + 1}-{label}.1"
    return f"{major}.{minor}.{patch}-{label}.1"
''')
commit("Add next_prerelease()")
append("CHANGELOG.md", "\n## 1.3.0 (unreleased)\n- is_prerelease, max_version, satisfies_min, next_prerelease\n")
commit("Changelog: 1.3.0 notes")
edit("verlib.py", '''    m = _RE.match(text.strip())''', '''    text = text.strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    m = _RE.match(text)''')
commit("parse: accept a leading v")
append("tests/test_verlib.py", '''

def test_leading_v_and_sort():
    assert verlib.parse("v2.0.1")[:3] == (2, 0, 1)
    assert verlib.sort_versions(["1.0.0", "1.0.0-rc.1", "0.9.0"]) == ["0.9.0", "1.0.0-rc.1", "1.0.0"]
''')
commit("Tests for leading v and sorting")
edit("verlib.py", '''    if part == "patch":
        return f"{major}.{minor}.{patch + 1}"''', '''    if part == "patch":
        # 1.2.3-rc.1 is released as 1.2.3, not 1.2.4
        return f"{major}.{minor}.{patch if _pre else patch + 1}"''')
commit("bump: patch of a prerelease releases it")
PY
git gc -q --prune=now
