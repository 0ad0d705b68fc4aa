"""Repair a broken mesh into a clean closed volume that keeps the original shape: one of the
real meshes damaged on purpose (holes, flipped faces, duplicate and degenerate faces, a
triangle soup), scored by IoU with the undamaged original."""

from __future__ import annotations

import random

from taskgym.domains.mesh.generators import Design, export, real, real_mesh

REPAIR = '''
mesh = trimesh.load('{src}', force='mesh', process=False)
mesh = trimesh.Trimesh(mesh.vertices, mesh.faces, process=False)
mesh.merge_vertices()
mesh.update_faces(mesh.nondegenerate_faces())
mesh.update_faces(mesh.unique_faces())
mesh.remove_unreferenced_vertices()
trimesh.repair.fill_holes(mesh)
trimesh.repair.fix_normals(mesh, multibody={multibody})
mesh.export('{out}')
'''
BASES = ("busted.STL", "ballA.off", "featuretype.STL", "idler_riser.STL", "20mm-xyz-cube.stl",
         "angle_block.STL", "plate_holes.STL", "tube.obj")
DAMAGES = ("holes", "flips", "duplicates", "degenerate", "inside-out")


def damaged(base: str, damages: tuple[str, ...], rng: random.Random, fmt: str) -> Design:
    import numpy as np
    import trimesh

    good = real_mesh(base)
    faces = np.array(good.faces)
    if "inside-out" in damages:
        faces = faces[:, ::-1]
    if "flips" in damages:
        chosen = rng.sample(range(len(faces)), max(1, len(faces) // 20))
        faces[chosen] = faces[chosen][:, ::-1]
    extra = []
    if "duplicates" in damages:
        extra.append(faces[rng.sample(range(len(faces)), max(1, len(faces) // 30))])
    if "degenerate" in damages:
        picked = faces[rng.sample(range(len(faces)), max(1, len(faces) // 30))]
        extra.append(np.stack([picked[:, 0], picked[:, 1], picked[:, 0]], axis=1))
    if "holes" in damages:  # faces sharing no vertex, so that each hole is one missing triangle
        used: set[int] = set()
        keep = np.ones(len(faces), bool)
        for index in rng.sample(range(len(faces)), len(faces)):
            if keep.sum() <= len(faces) - max(1, len(faces) // 50):
                break
            if not used & set(faces[index]):
                keep[index] = False
                used |= set(faces[index]) | set(good.vertex_neighbors[faces[index][0]])
        faces = faces[keep]
    broken = trimesh.Trimesh(good.vertices, np.vstack([faces, *extra]), process=False)
    src = f"broken.{fmt}"
    listed = ", ".join(damages)
    return Design(
        f"Repair {base} ({listed})",
        f"/app/{src} is a real part ({base}, {len(good.faces)} faces as it was made) that was "
        f"damaged: {listed}. Repair it into one clean closed volume with outward normals that "
        f"keeps the original shape (no open, duplicate or degenerate faces) and save it as "
        f"/app/repaired.stl. Lengths are in mm, as in the file.",
        REPAIR.format(src=src, out="repaired.stl", multibody=False), "repaired.stl",
        inputs={src: export(broken, fmt)}, real=True, target=export(good, "stl"),
        tags=("repair", *damages))


def design(rng: random.Random) -> Design:
    damages = tuple(d for d in DAMAGES if rng.random() < 0.5) or ("holes",)
    if "inside-out" in damages and "flips" in damages:
        damages = tuple(d for d in damages if d != "flips")
    return damaged(rng.choice(BASES), damages, rng, rng.choice(("stl", "obj", "ply", "off")))


REAL = {
    "soup.stl": ("a triangle soup: 100 loose triangles", "its convex hull as one closed volume",
                 "mesh = trimesh.load('soup.stl', force='mesh').convex_hull\n", 1),
    "wallhole.obj": ("a 10 mm cube (X 0..10, Y 0..10, Z -10..0) with a slot through it along X "
                     "(Y 0..5, Z -6..-4) and a square pyramid on its +Y face (apex (5, 15, -5)), "
                     "exported as fanned polygons with T-junctions, duplicate and degenerate faces "
                     "and gaps", "the closed solid it describes",
                     "block = trimesh.boolean.difference([trimesh.creation.box(bounds=[[0, 0, -10], "
                     "[10, 10, 0]]), trimesh.creation.box(bounds=[[-1, -1, -6], [11, 5, -4]])], "
                     "engine='manifold')\npyramid = trimesh.convex.convex_hull([[0, 10, 0], [10, 10, 0], "
                     "[0, 10, -10], [10, 10, -10], [5, 15, -5]])\n"
                     "mesh = trimesh.boolean.union([block, pyramid], engine='manifold')\n", 1),
    "not_convex.obj": ("boxes sharing edges and faces, plus stray open faces", "the union of its "
                       "closed boxes as one clean body (drop the open fragments)",
                       "parts = trimesh.load('not_convex.obj', force='mesh').split(only_watertight=True)\n"
                       "mesh = trimesh.boolean.union(list(parts), engine='manifold')\n", 1),
    "multibody.stl": ("two closed bodies, one of them inside out", "both bodies with outward "
                      "normals (two bodies are expected)",
                      "mesh = trimesh.load('multibody.stl', force='mesh')\n"
                      "trimesh.repair.fix_normals(mesh, multibody=True)\n", 2),
}
"""The real broken meshes as they are: what is wrong, what to make of it, the oracle, bodies."""


def real_broken(name: str) -> Design:
    wrong, wanted, solve, bodies = REAL[name]
    return Design(
        f"Repair {name}", f"/app/{name} is a real broken mesh: {wrong}. Make it into {wanted} "
        "(clean and closed: no open, duplicate or degenerate faces, outward normals) and save it "
        "as /app/repaired.ply. Lengths are in the file's units, read as mm.",
        solve + "mesh.export('repaired.ply')\n", "repaired.ply", inputs={name: real(name)},
        real=True, settings={"bodies": bodies}, tags=("repair", "real-broken"))
