"""Decide whether a graded project's GDScript may run: a tokenizer and an allow-list.

:func:`tokens` splits a script the way the engine's GDScript tokenizer does (ASCII names,
strings with escapes, comments, ``$`` node paths); anything it cannot read is refused.
:func:`declared` collects what a script declares (variables, constants, functions, signals,
parameters, loop variables, enum members). :func:`refusal` then accepts a script only when
every name it uses is one of those, a keyword, a built-in function or type, a class of
:data:`gdnames.SCRIPT_CLASSES`, or a member of the engine classes the tasks use
(:data:`gdnames.ENGINE_MEMBERS`); ``preload``/``load`` only of a string naming one of the
project's graded files, ``connect`` only of a signal to one of the script's own methods, and
``emit_signal`` only of a signal the script declares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gdnames import (
    BUILTIN_FUNCTIONS,
    BUILTIN_TYPES,
    ENGINE_MEMBERS,
    INPUT_METHODS,
    KEYWORDS,
    REFUSED_KEYWORDS,
    SCRIPT_CLASSES,
    TYPE_CONSTANTS,
    VARIANT_MEMBERS,
)

TOKEN = re.compile(
    r'(?P<space>[ \t\r\f]+|\\\n)|(?P<newline>\n)|(?P<comment>#[^\n]*)'
    r'|(?P<string>"""(?:\\.|[^\\])*?"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')'
    r"|(?P<number>0x[0-9a-fA-F_]+|0b[01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:e[+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\*\*=|<<=|>>=|[-+*/%&|^<>=!]=|<<|>>|&&|\|\||->|[-+*/%&|^~!<>=()\[\]{}.,:;$@?])"
)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "a": "\a",
           "0": "\0", "\\": "\\", '"': '"', "'": "'", "\n": ""}


@dataclass(frozen=True)
class Token:
    kind: str  # name, string, number, op, newline
    text: str
    line: int


class ScriptError(ValueError):
    """A script the grader refuses (the message says where and why)."""


def unescape(body: str, line: int) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1: i + 2]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2: i + 6]):
            out.append(chr(int(body[i + 2: i + 6], 16)))
            i += 6
        elif nxt in ESCAPES:
            out.append(ESCAPES[nxt])
            i += 2
        else:
            raise ScriptError(f"line {line}: an escape the grader does not read: \\{nxt}")
    return "".join(out)


def tokens(source: str) -> list[Token]:
    """The script's tokens (strings unescaped, without their quotes); a character the engine's
    tokenizer would not read as GDScript is refused."""
    out: list[Token] = []
    pos, line = 0, 1
    while pos < len(source):
        match = TOKEN.match(source, pos)
        if match is None or match.end() == pos:
            raise ScriptError(f"line {line}: the grader cannot read {source[pos:pos + 10]!r}")
        kind, text = match.lastgroup or "", match.group()
        if kind == "string":
            quote = 3 if text.startswith('"""') else 1
            out.append(Token("string", unescape(text[quote:-quote], line), line))
        elif kind in ("name", "number", "op", "newline"):
            out.append(Token(kind, text, line))
        line += text.count("\n")
        pos = match.end()
    return out


def declared(toks: list[Token]) -> set[str]:
    """The names a script declares: after var/const/func/signal/enum/for, a function's
    parameters and an enum's members."""
    names: set[str] = set()
    depth, in_params, in_enum = 0, False, False
    for i, tok in enumerate(toks):
        prev = toks[i - 1].text if i else ""
        if tok.kind == "name" and prev in ("var", "const", "func", "signal", "enum", "for"):
            names.add(tok.text)
        if tok.text == "(" and i >= 2 and toks[i - 2].text == "func":
            in_params, depth = True, 0
        if in_params:
            depth += tok.text in "([{" and tok.kind == "op"
            depth -= tok.text in ")]}" and tok.kind == "op"
            if tok.kind == "name" and depth == 1 and prev in ("(", ","):
                names.add(tok.text)
            in_params = depth > 0
        if tok.text == "{" and "enum" in (prev, toks[i - 2].text if i >= 2 else ""):
            in_enum = True
        elif in_enum and tok.text == "}":
            in_enum = False
        elif in_enum and tok.kind == "name" and prev in ("{", ","):
            names.add(tok.text)
    return names


def _arguments(toks: list[Token], i: int) -> list[Token]:
    """The tokens after ``toks[i]`` up to the closing parenthesis of its call (empty when it is
    not called)."""
    if i + 1 >= len(toks) or toks[i + 1].text != "(":
        return []
    depth, out = 0, []
    for tok in toks[i + 1:]:
        if tok.kind == "op" and tok.text in "([{":
            depth += 1
        elif tok.kind == "op" and tok.text in ")]}":
            depth -= 1
            if depth == 0:
                return out
        if depth:
            out.append(tok)
    raise ScriptError(f"line {toks[i].line}: an unclosed call")


def _literal_call(toks: list[Token], i: int, shape: str) -> list[str]:
    """The string/name arguments of the call at ``toks[i]`` when they match ``shape`` (``s``
    a string, ``n`` a name, separated by commas), else ``[]``."""
    args = _arguments(toks, i)[1:]
    kinds = "".join("s" if t.kind == "string" else "n" if t.kind == "name" else t.text for t in args)
    return [t.text for t in args if t.kind != "op"] if kinds == shape else []


def check(source: str, own: set[str], shared: set[str], files: set[str]) -> None:
    """Raise :class:`ScriptError` unless every name ``source`` uses is allowed: ``own`` is what
    it declares, ``shared`` what every graded script declares (reachable as ``other.name``),
    ``files`` the project's graded files (``res://...``)."""
    toks = tokens(source)
    funcs = {toks[i + 1].text for i, t in enumerate(toks[:-1]) if t.text == "func"}
    signals = {toks[i + 1].text for i, t in enumerate(toks[:-1]) if t.text == "signal"}
    path = ""  # in a $ node path: "name" when a node name is next, "/" when a slash may be
    for i, tok in enumerate(toks):
        prev = toks[i - 1] if i else Token("newline", "\n", 0)
        if tok.kind == "op" and tok.text == "$":
            path = "name"
            continue
        if path == "name" and tok.kind in ("name", "string"):  # $Body/Mesh, $"Body/Mesh"
            path = "/" if tok.kind == "name" else ""
            continue
        if path == "/" and tok.kind == "op" and tok.text == "/":
            path = "name"
            continue
        if path == "name":
            raise ScriptError(f"line {tok.line}: a $ node path is names separated by /, or a string")
        path = ""
        if tok.kind == "string" and prev.text == "extends" and tok.text not in files:
            raise ScriptError(f"line {tok.line}: extends \"path\" only of a graded script of the project")
        if tok.kind == "op" and tok.text == "@":
            raise ScriptError(f"line {tok.line}: '@' is not GDScript 3")
        if tok.kind != "name":
            continue
        name, where = tok.text, f"line {tok.line}"
        if name in REFUSED_KEYWORDS:
            raise ScriptError(f"{where}: `{name}` {REFUSED_KEYWORDS[name]}, "
                              "which graded projects may not use")
        if prev.text == "extends":
            if name not in SCRIPT_CLASSES:
                raise ScriptError(f"{where}: scripts may extend only the allow-listed node types, "
                                  f"not {name}")
            continue
        if name in ("preload", "load"):
            target = _literal_call(toks, i, "s")
            if not target or target[0] not in files:
                raise ScriptError(f"{where}: {name} only of a string naming one of the project's "
                                  "graded files")
            continue
        if name == "connect":
            args = _literal_call(toks, i, "s,n,s")
            if not args or args[1] != "self" or args[2] not in funcs:
                raise ScriptError(f"{where}: connect(\"signal\", self, \"method\") only, to a method "
                                  "this script declares")
            continue
        if name == "emit_signal":
            args = _arguments(toks, i)  # "(", then the signal's name: one string, whole
            whole = len(args) == 2 or len(args) > 2 and args[2].text == "," and args[2].kind == "op"
            if prev.text == "." and toks[i - 2].text != "self" or len(args) < 2 or not whole \
                    or args[1].kind != "string" or args[1].text not in signals:
                raise ScriptError(f"{where}: emit_signal only of a signal this script declares, on itself")
            continue
        if prev.text == ".":
            allowed = ENGINE_MEMBERS | VARIANT_MEMBERS | INPUT_METHODS | shared | {"new"}
            if name not in allowed:
                raise ScriptError(f"{where}: `.{name}` is not on the grader's allow-list")
            continue
        allowed = (KEYWORDS | own | BUILTIN_FUNCTIONS | BUILTIN_TYPES | SCRIPT_CLASSES | TYPE_CONSTANTS
                   | ENGINE_MEMBERS)
        if name not in allowed:
            raise ScriptError(f"{where}: `{name}` is not on the grader's allow-list")
    for i, tok in enumerate(toks):
        before = toks[i - 1] if i else tok
        named = before.kind == "name" and (before.text not in KEYWORDS or before.text == "self")
        if tok.text == "[" and (named or before.text in (")", "]")):
            _check_subscript(toks, i)


def _check_subscript(toks: list[Token], i: int) -> None:
    """``x[key]``: an object's property by name (``node["script"]``) would pass any name
    list, so a string key may not name an engine member (a key computed at run time is not
    seen here: the harness checks what it could change, see harness.gd)."""
    depth = 0
    for tok in toks[i:]:
        depth += tok.kind == "op" and tok.text in "([{"
        depth -= tok.kind == "op" and tok.text in ")]}"
        if depth == 0:
            return
        if tok.kind == "string" and tok.text in ENGINE_MEMBERS | {"script"}:
            raise ScriptError(f"line {tok.line}: [{tok.text!r}] reaches an object's property by name")


def check_project(scripts: dict[str, str], files: Iterable[str]) -> str | None:
    """Why one of ``scripts`` (res:// path -> source) may not run, or ``None``."""
    own: dict[str, set[str]] = {}
    try:
        for path, source in scripts.items():
            own[path] = declared(tokens(source))
    except ScriptError as error:
        return f"{path}: {error}"
    shared = set().union(*own.values()) if own else set()
    wanted = set(files)
    for path, source in scripts.items():
        try:
            check(source, own[path], shared, wanted)
        except ScriptError as error:
            return f"{path}: {error}"
    return None
