"""Read Godot's text scene and resource formats (``.tscn``, ``.tres``) and allow-list them.

:func:`parse` follows the engine's own reader (``VariantParser``): sections ``[tag field=value
...]`` with tokens separated by any whitespace, ``key = value`` lines whose key is the raw
text before ``=``, values built from numbers, strings (with the engine's escapes), arrays,
dictionaries and constructors ``Name( ... )``; ``;`` starts a comment. What it cannot read is
refused, so the grader never accepts a file the engine would read differently.

:func:`refusal` then allows only: the sections a scene or resource has; nodes and
sub-resources of the types in :data:`gdnames.NODE_CLASSES` / :data:`gdnames.RESOURCE_CLASSES`
(so no embedded ``GDScript``, ``NativeScript``, ``VisualScript``, animation or file-loading
type, however spelt); external resources that are the project's own graded files (a
``Script`` only a ``.gd``); the value constructors of plain data (no ``Object(...)``, no
``Resource("path")``); ``script`` only on a node, as an external ``.gd``; no property that
pauses, reorders or re-weights the world (``pause_mode``, an Area's gravity override); and
connections only to a method some graded script declares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gdnames import NODE_CLASSES, RESOURCE_CLASSES

CONSTRUCTORS = frozenset("""
Vector2 Vector3 Color Transform Transform2D Basis Quat Rect2 AABB Plane NodePath ExtResource
SubResource PoolByteArray PoolIntArray PoolRealArray PoolStringArray PoolVector2Array
PoolVector3Array PoolColorArray
""".split())
WORDS = frozenset({"true", "false", "null", "nan", "inf", "inf_neg"})
SECTIONS = {
    ".tscn": frozenset({"gd_scene", "ext_resource", "sub_resource", "node", "connection", "editable"}),
    ".tres": frozenset({"gd_resource", "ext_resource", "sub_resource", "resource"}),
}
REFUSED_PROPERTIES = {
    "pause_mode": "keeps a node running while the tree is paused",
    "space_override": "overrides the world's gravity", "gravity": "overrides the world's gravity",
    "gravity_vec": "overrides the world's gravity", "gravity_point": "overrides the world's gravity",
    "gravity_distance_scale": "overrides the world's gravity",
}
NODE_FIELDS = frozenset({"name", "type", "parent", "instance", "groups", "index", "owner"})
TOKEN = re.compile(
    r'(?P<space>[ \t\r\n]+)|(?P<comment>;[^\n]*)|(?P<string>"(?:\\.|[^"\\])*")'
    r"|(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>[\[\]{}(),:=])",
    re.S,
)
KEY = re.compile(r"([A-Za-z0-9_/:.\-]+)[ \t]*=")
ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}


class ResourceError(ValueError):
    """A scene or resource file the grader refuses."""


@dataclass
class Section:
    tag: str
    fields: dict[str, Any]
    props: list[tuple[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Any, ...]


def unescape(body: str) -> str:
    """A string's text as the engine reads it: ``\\b \\t \\n \\f \\r \\uXXXX``, any other
    escaped character stands for itself."""
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "u":
                digits = body[i + 2: i + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                    raise ResourceError("a malformed \\u escape")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class Reader:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def line(self) -> int:
        return self.text.count("\n", 0, self.pos) + 1

    def fail(self, what: str) -> ResourceError:
        return ResourceError(f"line {self.line()}: {what}")

    def token(self) -> tuple[str, Any]:
        while True:
            if self.pos >= len(self.text):
                return "eof", None
            match = TOKEN.match(self.text, self.pos)
            if match is None:
                raise self.fail(f"the grader cannot read {self.text[self.pos:self.pos + 12]!r}")
            self.pos = match.end()
            kind, text = match.lastgroup or "", match.group()
            if kind in ("space", "comment"):
                continue
            if kind == "string":
                return "string", unescape(text[1:-1])
            if kind == "number":
                return "number", float(text)
            return kind, text

    def value(self, kind: str, text: Any) -> Any:
        if kind in ("string", "number"):
            return text
        if kind == "op" and text == "[":
            items = []
            while True:
                kind, text = self.token()
                if (kind, text) == ("op", "]"):
                    return items
                items.append(self.value(kind, text))
                kind, text = self.token()
                if (kind, text) == ("op", "]"):
                    return items
                if (kind, text) != ("op", ","):
                    raise self.fail("expected ',' or ']'")
        if kind == "op" and text == "{":
            pairs = []
            while True:
                kind, text = self.token()
                if (kind, text) == ("op", "}"):
                    return dict(pairs)
                key = self.value(kind, text)
                if self.token() != ("op", ":"):
                    raise self.fail("expected ':'")
                pairs.append((str(key), self.value(*self.token())))
                kind, text = self.token()
                if (kind, text) == ("op", "}"):
                    return dict(pairs)
                if (kind, text) != ("op", ","):
                    raise self.fail("expected ',' or '}'")
        if kind == "name":
            if text in WORDS:
                return Call(text, ())
            if self.token() != ("op", "("):
                raise self.fail(f"{text} is not a value the grader reads")
            if text not in CONSTRUCTORS:
                raise self.fail(f"{text}( ... ) is not allowed in graded scenes")
            args = []
            while True:
                kind, text2 = self.token()
                if (kind, text2) == ("op", ")"):
                    return Call(text, tuple(args))
                args.append(self.value(kind, text2))
                kind, text2 = self.token()
                if (kind, text2) == ("op", ")"):
                    return Call(text, tuple(args))
                if (kind, text2) != ("op", ","):
                    raise self.fail("expected ',' or ')'")
        raise self.fail(f"unexpected {text!r}")

    def section(self) -> Section:
        kind, name = self.token()
        if kind != "name":
            raise self.fail("expected a section name after '['")
        fields: dict[str, Any] = {}
        while True:
            kind, text = self.token()
            if (kind, text) == ("op", "]"):
                return Section(name, fields)
            if kind != "name" or self.token() != ("op", "="):
                raise self.fail(f"expected field = value in [{name} ...]")
            if text in fields:
                raise self.fail(f"{text} given twice in [{name} ...]")
            fields[text] = self.value(*self.token())

    def key(self) -> str | None:
        """The key of a ``key = value`` line, or None at a section or the end. The engine
        drops whitespace inside a key (``scr ipt`` is ``script``); the grader refuses such a
        key instead of guessing."""
        while True:
            match = re.compile(r"\s*(;[^\n]*)?").match(self.text, self.pos)
            assert match is not None
            self.pos = match.end()
            if not match.group(1):
                break
        if self.pos >= len(self.text) or self.text[self.pos] == "[":
            return None
        match = KEY.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a property: key = value")
        self.pos = match.end()
        return match.group(1)


def parse(text: str) -> list[Section]:
    """The sections of a text scene or resource, with their properties."""
    reader, sections = Reader(text), []
    while True:
        key = reader.key()
        if key is None:
            if reader.pos >= len(text):
                return sections
            reader.pos += 1  # the '['
            sections.append(reader.section())
        elif not sections:
            raise reader.fail("a property before the first section")
        else:
            sections[-1].props.append((key, reader.value(*reader.token())))


def _calls(value: Any) -> list[Call]:
    if isinstance(value, Call):
        return [value, *(c for a in value.args for c in _calls(a))]
    if isinstance(value, list):
        return [c for v in value for c in _calls(v)]
    if isinstance(value, dict):
        return [c for v in value.values() for c in _calls(v)]
    return []


def check(path: str, text: str, files: set[str], methods: set[str]) -> None:
    """Raise :class:`ResourceError` unless the scene/resource ``text`` at ``path`` (res://...)
    is allowed; ``files`` are the project's graded files, ``methods`` every function its
    graded scripts declare."""
    suffix = path[path.rfind("."):]
    sections = parse(text)
    head = "gd_scene" if suffix == ".tscn" else "gd_resource"
    if not sections or sections[0].tag != head:
        raise ResourceError(f"the file must start with [{head} ...]")
    if sections[0].fields.get("format") != 2:
        raise ResourceError("only format=2 (Godot 3) files are graded")
    if head == "gd_resource" and hashable(sections[0].fields.get("type")) not in RESOURCE_CLASSES:
        raise ResourceError(f"a {sections[0].fields.get('type')} resource is not on the allow-list")
    exts: dict[Any, str] = {}  # by hashable(id)
    subs: set[Any] = set()
    for section in sections[1:]:
        tag, fields = section.tag, section.fields
        if tag not in SECTIONS[suffix] or tag == head:
            raise ResourceError(f"a [{tag}] section is not allowed in a {suffix} file")
        if tag == "ext_resource":
            target, kind = fields.get("path"), fields.get("type")
            if hashable(target) not in files:
                raise ResourceError(f"[ext_resource] {target!r} is not one of the project's graded files")
            wanted = ".gd" if kind == "Script" else ".tscn" if kind == "PackedScene" else ".tres"
            if not str(target).endswith(wanted):
                raise ResourceError(f"[ext_resource] a {kind} must be a {wanted} file, not {target}")
            exts[hashable(fields.get("id"))] = str(kind)
        elif tag == "sub_resource":
            if hashable(fields.get("type")) not in RESOURCE_CLASSES:
                raise ResourceError(f"a {fields.get('type')!r} sub-resource is not on the allow-list "
                                    "(scripts must be .gd files)")
            subs.add(hashable(fields.get("id")))
        elif tag == "node":
            extra = set(fields) - NODE_FIELDS
            if extra:
                raise ResourceError(f"[node] field {sorted(extra)[0]} is not allowed")
            if "type" in fields and hashable(fields["type"]) not in NODE_CLASSES:
                raise ResourceError(f"a {fields['type']!r} node is not on the allow-list")
        elif tag == "connection":
            if hashable(fields.get("method")) not in methods:
                raise ResourceError(f"[connection] method {fields.get('method')!r} is declared by no "
                                    "graded script")
        for key, value in section.props:
            if key in REFUSED_PROPERTIES:
                raise ResourceError(f"{key} {REFUSED_PROPERTIES[key]}, which graded scenes may not")
            external = isinstance(value, Call) and value.name == "ExtResource"
            if key == "script" and (tag != "node" or not external
                                    or exts.get(hashable(value.args[0] if value.args else None)) != "Script"):
                raise ResourceError("script may only be an [ext_resource] .gd on a node")
        for call in [c for v in [*fields.values(), *(v for _, v in section.props)] for c in _calls(v)]:
            ref = hashable(call.args[0] if call.args else None)
            declared = exts if call.name == "ExtResource" else subs if call.name == "SubResource" else None
            if declared is not None and ref not in declared:
                raise ResourceError(f"{call.name}( {ref} ) names no resource declared above it")


def check_file(path: str, text: str, files: set[str], methods: set[str]) -> str | None:
    """Why ``path`` may not be graded, or ``None``."""
    try:
        check(path, text, files, methods)
    except ResourceError as error:
        return f"{path}: {error}"
    except RecursionError:
        return f"{path}: values nested too deeply"
    return None


def hashable(value: Any) -> Any:
    """``value`` as a set member: a field may hold a list where a name or id belongs."""
    return value if isinstance(value, (str, float)) else repr(value)
