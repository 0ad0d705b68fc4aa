"""Decimate a dense closed mesh under a face budget while staying within a Hausdorff bound
of it (a fine sphere, torus or capsule, or a subdivided real part); the bound is the score."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from taskgym.domains.mesh.generators import Design, export, real_mesh

if TYPE_CHECKING:
    import trimesh

SHAPES = ("sphere", "torus", "capsule", "ballA")
SIMPLIFY = '''
dense = trimesh.load('{src}', force='mesh')
solid = manifold3d.Manifold(manifold3d.Mesh64(np.ascontiguousarray(dense.vertices, dtype=np.float64),
                                              np.ascontiguousarray(dense.faces, dtype=np.uint64)))
out = solid.simplify({tolerance}).to_mesh64()
trimesh.Trimesh(out.vert_properties[:, :3], out.tri_verts).export('{out}')
'''


def dense_mesh(shape: str, size: float) -> trimesh.Trimesh:
    import trimesh

    if shape == "sphere":
        sphere: trimesh.Trimesh = trimesh.creation.icosphere(subdivisions=5, radius=size / 2)
        return sphere
    if shape == "torus":
        torus: trimesh.Trimesh = trimesh.creation.torus(size / 2, size / 6, major_sections=160,
                                                        minor_sections=64)
        return torus
    if shape == "capsule":
        capsule: trimesh.Trimesh = trimesh.creation.capsule(height=size, radius=size / 4, count=[96, 96])
        return capsule
    return real_mesh("ballA.off").subdivide()


def decimate(shape: str, size: float, keep: float, fmt: str) -> Design:
    import sys

    import numpy as np
    import trimesh

    from taskgym.domains.mesh.verifier import INSIDE_DIR

    sys.path.insert(0, str(INSIDE_DIR))
    import meshlib

    dense = dense_mesh(shape, size)
    budget = int(len(dense.faces) * keep)
    solid = meshlib.to_manifold(dense)
    tolerance = float(dense.scale) * 1e-4
    while True:  # the smallest tolerance (in steps) that meets the budget with a clean result
        tolerance = round(tolerance * 1.25, 6)
        out = solid.simplify(tolerance).to_mesh64()
        small = trimesh.Trimesh(out.vert_properties[:, :3], out.tri_verts)
        if len(small.faces) <= budget and meshlib.solid_problem(meshlib.properties(small)) is None:
            break
    far = meshlib.surface_distances(small, dense)["hausdorff_mm"]
    bound = float(np.format_float_positional(far * 1.5 + 1e-4, 2, fractional=False))
    src = f"dense.{fmt}"
    return Design(
        f"Decimate a {len(dense.faces)}-face {shape} to {budget} faces",
        f"/app/{src} is a closed mesh of {len(dense.faces)} faces. Reduce it to at most {budget} "
        f"faces, still one clean closed volume, whose surface stays within {bound:g} mm of the "
        "original's (Hausdorff distance, both ways), and save it as /app/decimated.stl.",
        SIMPLIFY.format(src=src, tolerance=tolerance, out="decimated.stl"), "decimated.stl",
        inputs={src: export(dense, fmt)}, real=shape == "ballA",
        target=export(dense, "stl"),
        settings={"score": "hausdorff", "max_faces": budget, "hausdorff_mm": bound},
        tags=("decimate", shape))


def design(rng: random.Random) -> Design:
    return decimate(rng.choice(SHAPES), float(rng.randrange(20, 81, 5)), rng.choice((0.1, 0.2, 0.3)),
                    rng.choice(("stl", "ply", "off")))
