"""Hollow a solid to a wall thickness, with a drain hole through the bottom wall: a box, a
cylinder or the real ball mesh; scored by IoU with the shelled part."""

from __future__ import annotations

import random

from taskgym.domains.mesh.generators import Design, export, real, real_mesh
from taskgym.domains.mesh.generators.build import disc

SHAPES = ("box", "cylinder", "ball")


def hollow(shape: str, size: float, wall: float, drain: float, fmt: str) -> Design:
    import trimesh

    inputs: dict[str, bytes | str] = {}
    drill = "trimesh.creation.cylinder(radius={r}, segment=[[{x}, {y}, {z0}], [{x}, {y}, {z1}]], sections=96)"
    if shape == "box":
        h = round(size * 0.6, 3)
        solid = trimesh.creation.box(bounds=[[0.0, 0.0, 0.0], [size, size, h]])
        cavity = (f"trimesh.creation.box(bounds=[[{wall}, {wall}, {wall}], "
                  f"[{size - wall}, {size - wall}, {h - wall}]])")
        hole = drill.format(r=drain / 2, x=size / 2, y=size / 2, z0=-1, z1=wall + 1)
        told = (f"a box X 0..{size:g}, Y 0..{size:g}, Z 0..{h:g}. Hollow it to a {wall:g} mm wall on "
                f"every side and drill a {drain:g} mm drain hole along Z through the bottom wall at "
                "its centre")
    elif shape == "cylinder":
        h = round(size * 1.2, 3)
        solid = trimesh.creation.cylinder(radius=size / 2, segment=[[0.0, 0.0, 0.0], [0.0, 0.0, h]],
                                          sections=96)
        cavity = drill.format(r=size / 2 - wall, x=0, y=0, z0=wall, z1=h - wall)
        hole = drill.format(r=drain / 2, x=0, y=0, z0=-1, z1=wall + 1)
        told = (f"a cylinder of diameter {size:g} mm along Z from Z = 0 to {h:g}, axis through the "
                f"origin. Hollow it to a {wall:g} mm wall (side, top and bottom) and drill a {drain:g} mm "
                "drain hole along Z through the bottom wall on the axis")
    else:
        solid = real_mesh("ballA.off")
        centre = solid.bounds.mean(axis=0).round(4).tolist()
        radius = float(solid.extents.max() / 2)
        factor = round((radius - wall) / radius, 4)
        cavity = (f"solid.copy().apply_transform(trimesh.transformations.scale_matrix({factor}, "
                  f"{centre}))")
        low = round(float(solid.bounds[0][2]), 4)
        hole = drill.format(r=drain / 2, x=centre[0], y=centre[1], z0=low - 1, z1=centre[2])
        told = (f"the real ball ballA.off, centred near {tuple(centre)} with radius about "
                f"{radius:.3f} mm. Hollow it to a {wall:g} mm wall, the cavity being the ball scaled "
                f"by {factor} about {tuple(centre)}, and drill a {drain:g} mm drain hole along Z from "
                "below up to the cavity, on the vertical through that centre")
        inputs["ballA.off"] = real("ballA.off")
    if shape != "ball":
        inputs[f"{shape}.stl"] = export(solid, "stl")
    name = next(iter(inputs))
    load = f"solid = trimesh.load('{name}', force='mesh')\n"
    return Design(
        f"Hollow a {shape} to a {wall:g} mm wall",
        f"/app/{name} is {told}. Save the result as /app/shell.{fmt} (one watertight body).",
        load + f"shell = trimesh.boolean.difference([solid, {cavity}, {hole}], engine='manifold')\n"
        f"shell.export('shell.{fmt}')\n", f"shell.{fmt}", inputs=inputs, real=shape == "ball",
        tags=("hollow", shape), settings={"min_feature_mm3": round(disc(drain) * wall, 4)})


def design(rng: random.Random) -> Design:
    shape = rng.choice(SHAPES)
    if shape == "ball":
        return hollow(shape, 0, rng.choice((0.8, 1.0, 1.5)), rng.choice((1.5, 2.0)),
                      rng.choice(("stl", "ply")))
    size = float(rng.randrange(20, 61, 5))
    return hollow(shape, size, rng.choice((1.5, 2.0, 3.0)), rng.choice((3.0, 4.0, 5.0)),
                  rng.choice(("stl", "ply", "obj")))
