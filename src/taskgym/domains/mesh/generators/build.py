"""Build a described part from primitives and booleans (a plate with holes, a block with a
boss, an L bracket), in millimetres, as one watertight body; scored by IoU."""

from __future__ import annotations

import math
import random

from taskgym.domains.mesh.generators import Design

HELPERS = '''
def box(x0, y0, z0, x1, y1, z1):
    return trimesh.creation.box(bounds=[[x0, y0, z0], [x1, y1, z1]])


def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)
'''
FORMATS = ("stl", "ply", "obj", "off", "glb")


def disc(diameter: float) -> float:
    """The area of a round hole of ``diameter`` (its volume per millimetre of depth)."""
    return round(math.pi * diameter * diameter / 4, 4)


def plate(w: float, d: float, t: float, holes: list[tuple[float, float, float]], fmt: str) -> Design:
    listed = "; ".join(f"diameter {h:g} mm at (X {x:g}, Y {y:g})" for x, y, h in holes)
    cuts = ", ".join(f"cylinder({x!r}, {y!r}, -1, {t + 1!r}, {h!r})" for x, y, h in holes)
    return Design(
        f"Plate {w:g} x {d:g} x {t:g} mm with {len(holes)} holes",
        f"Model a plate spanning X = 0..{w:g}, Y = 0..{d:g}, Z = 0..{t:g} mm with round through "
        f"holes along Z: {listed}. Save it as /app/part.{fmt} (one watertight body).",
        HELPERS + f"part = trimesh.boolean.difference([box(0, 0, 0, {w!r}, {d!r}, {t!r}), {cuts}], "
        f"engine='manifold')\npart.export('part.{fmt}')\n", f"part.{fmt}", tags=("plate",),
        settings={"min_feature_mm3": round(min(disc(h) * t for _, _, h in holes), 4)})


def boss(w: float, d: float, t: float, dia: float, h: float, bore: float, fmt: str) -> Design:
    return Design(
        f"Block {w:g} x {d:g} x {t:g} mm with a boss",
        f"Model a block spanning X = 0..{w:g}, Y = 0..{d:g}, Z = 0..{t:g} mm with a round boss of "
        f"diameter {dia:g} mm on its top face, centred on it and rising to Z = {t + h:g}, and a "
        f"bore of diameter {bore:g} mm along Z through the boss and the block. Save it as "
        f"/app/part.{fmt} (one watertight body).",
        HELPERS + f"solid = trimesh.boolean.union([box(0, 0, 0, {w!r}, {d!r}, {t!r}), cylinder({w / 2!r}, "
        f"{d / 2!r}, {t / 2!r}, {t + h!r}, {dia!r})], engine='manifold')\n"
        f"part = trimesh.boolean.difference([solid, cylinder({w / 2!r}, {d / 2!r}, -1, {t + h + 1!r}, "
        f"{bore!r})], engine='manifold')\npart.export('part.{fmt}')\n", f"part.{fmt}",
        tags=("boss",),
        settings={"min_feature_mm3": round(min(disc(bore) * (t + h), (disc(dia) - disc(bore)) * h), 4)})


def bracket(length: float, width: float, height: float, thick: float, hole: float, fmt: str) -> Design:
    return Design(
        f"L bracket {length:g} x {width:g} x {height:g} mm",
        f"Model an L bracket: a base plate X = 0..{length:g}, Y = 0..{width:g}, Z = 0..{thick:g} and "
        f"an upright plate X = 0..{thick:g}, Y = 0..{width:g}, Z = 0..{height:g} (one body), with "
        f"a round hole of diameter {hole:g} mm through the base along Z at (X {length * 0.6:g}, "
        f"Y {width / 2:g}). Save it as /app/part.{fmt} (one watertight body).",
        HELPERS + f"solid = trimesh.boolean.union([box(0, 0, 0, {length!r}, {width!r}, {thick!r}), "
        f"box(0, 0, 0, {thick!r}, {width!r}, {height!r})], engine='manifold')\n"
        f"part = trimesh.boolean.difference([solid, cylinder({length * 0.6!r}, {width / 2!r}, -1, "
        f"{thick + 1!r}, {hole!r})], engine='manifold')\npart.export('part.{fmt}')\n",
        f"part.{fmt}", tags=("bracket",), settings={"min_feature_mm3": round(disc(hole) * thick, 4)})


def design(rng: random.Random) -> Design:
    fmt = rng.choice(FORMATS)
    kind = rng.choice(("plate", "boss", "bracket"))
    if kind == "plate":
        w, d, t = rng.randrange(40, 121, 5), rng.randrange(30, 81, 5), rng.randrange(3, 11)
        m = rng.choice((6, 8, 10))
        holes = [(float(x), float(y), rng.choice((3.0, 4.5, 6.6))) for x, y in
                 ((m, m), (w - m, m), (m, d - m), (w - m, d - m))][: rng.randint(1, 4)]
        return plate(w, d, t, holes, fmt)
    if kind == "boss":
        w, d, t = rng.randrange(30, 81, 5), rng.randrange(30, 81, 5), rng.randrange(5, 16)
        dia = rng.randrange(10, int(min(w, d)) - 5, 2)
        return boss(w, d, t, dia, rng.randrange(5, 21), rng.choice((3.0, 4.0, 5.0, 6.0)), fmt)
    return bracket(rng.randrange(40, 101, 5), rng.randrange(20, 61, 5), rng.randrange(30, 81, 5),
                   rng.randrange(4, 11), rng.choice((4.5, 5.5, 6.6)), fmt)
