"""Godot 3 scene text (``.tscn``) and what every task family of ``game-godot-v0`` writes:
the project settings, the hidden check's header, the floor."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CHECK", "FLOOR", "SETTINGS", "Files", "Made", "Node", "ground", "tscn", "v3", "xf"]

Files = dict[str, str]
Node = tuple[str, "str | None", "str | None", dict[str, str]]
"""A scene node: name, type, parent path, properties."""
Made = tuple[str, Files, Files, str, int, str]
"""instruction, project files, solution files, check body, frames, inputs."""
SETTINGS = (
    'config_version=4\n\n[application]\n\nconfig/name="{name}"\nrun/main_scene="res://main.tscn"\n'
    '\n[input]\n\nnext={{\n"deadzone": 0.5,\n"events": [  ]\n}}\n'
)
CHECK = 'extends "/.game/checklib.gd"\n\nfunc _init():\n\tframes = {frames}\n\tinputs = {inputs}\n\n{body}'


def xf(x: float, y: float, z: float) -> str:
    return f"Transform( 1, 0, 0, 0, 1, 0, 0, 0, 1, {x:g}, {y:g}, {z:g} )"


def v3(v: tuple[float, float, float]) -> str:
    return f"Vector3( {v[0]:g}, {v[1]:g}, {v[2]:g} )"


def tscn(
    nodes: Sequence[Node],
    subs: Sequence[tuple[str, dict[str, str]]] = (),
    exts: Sequence[tuple[str, str]] = (),
    connections: Sequence[tuple[str, str, str, str]] = (),
) -> str:
    """A .tscn text: nodes (name, type, parent, properties), sub-resources (type, properties),
    external resources (path, type), connections (signal, from, to, method)."""
    out = [f"[gd_scene load_steps={len(subs) + len(exts) + 1} format=2]\n"]
    out += [f'[ext_resource path="{p}" type="{t}" id={i}]' for i, (p, t) in enumerate(exts, 1)]
    out += [""] if exts else []
    for i, (resource, values) in enumerate(subs, 1):
        out.append(f'[sub_resource type="{resource}" id={i}]')
        out += [f"{k} = {v}" for k, v in values.items()] + [""]
    for name, kind, parent_path, props in nodes:
        head = (
            f'[node name="{name}"'
            + (f' type="{kind}"' if kind else "")
            + (f' parent="{parent_path}"' if parent_path is not None else "")
        )
        out.append(head + "]")
        out += [f"{k} = {v}" for k, v in props.items()] + [""]
    out += [f'[connection signal="{s}" from="{a}" to="{b}" method="{m}"]' for s, a, b, m in connections]
    return "\n".join(out) + "\n"


def ground(extra: Sequence[Node] = (), shape: bool = True) -> list[Node]:
    nodes: list[Node] = [("Main", "Spatial", None, {}), ("Floor", "StaticBody", ".", {})]
    if shape:
        nodes.append(("Shape", "CollisionShape", "Floor", {"shape": "SubResource( 1 )"}))
    return nodes + list(extra)


FLOOR = ("BoxShape", {"extents": "Vector3( 20, 0.5, 20 )"})  # top face at y = 0.5
