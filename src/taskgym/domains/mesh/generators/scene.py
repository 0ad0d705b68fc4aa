"""Arrange parts in a scene: every part resting on the floor (or on the part it stands on),
no two overlapping (manifold intersection volume zero), given relations holding; each body
is matched to its part by IoU, the lowest of which is the score."""

from __future__ import annotations

import random

from taskgym.domains.mesh.generators import Design, export, real_mesh

LAYOUT = '''
parts = {{name: trimesh.load(f'{{name}}.stl', force='mesh') for name in {names}}}


def put(name, x0, y0, z0):
    """Move a part so its bounding box's minimum corner is at (x0, y0, z0)."""
    parts[name].apply_translation(np.array([x0, y0, z0]) - parts[name].bounds[0])


'''


def scene(sizes: list[float], gap: float, stack: bool, ball: bool) -> Design:
    import trimesh

    meshes: dict[str, trimesh.Trimesh] = {}
    for index, size in enumerate(sizes):
        box = trimesh.creation.box(extents=[size, size * 0.8, size * 0.5])
        box.apply_translation([index * 37.0 - 50, 23.0 * index, 11.0 + index * 3])
        meshes[f"block{index + 1}"] = box
    cylinder = trimesh.creation.cylinder(radius=sizes[0] / 4, height=sizes[0] / 2, sections=64)
    cylinder.apply_translation([5, -30, 40])
    meshes["post"] = cylinder
    if ball:
        meshes["ball"] = real_mesh("ballA.off")
    names = list(meshes)
    blocks = [n for n in names if n.startswith("block")]
    relations: list[list[object]] = [["gap_x", a, b, gap] for a, b in zip(blocks, blocks[1:], strict=False)]
    code, x = [], 0.0
    for name in blocks:
        code.append(f"put('{name}', {x}, 0, 0)")
        x += float(meshes[name].extents[0]) + gap
    if stack:
        first = meshes[blocks[0]]
        lift = float(first.extents[2])
        cx, cy = float(first.extents[0]) / 2, float(first.extents[1]) / 2
        r = float(meshes["post"].extents[0]) / 2
        code.append(f"put('post', {cx - r}, {cy - r}, {lift})")
        relations.append(["on", "post", blocks[0]])
        told_post = f"stand the post upright on top of {blocks[0]}, centred on it"
    else:
        code.append(f"put('post', 0, {float(meshes[blocks[0]].extents[1]) + gap}, 0)")
        relations.append(["behind", "post", blocks[0]])
        told_post = f"stand the post on the floor behind {blocks[0]} (at larger Y, clear of it in Y)"
    if ball:
        code.append(f"put('ball', {x}, 0, 0)")
        relations.append(["left_of", blocks[-1], "ball"])
    told_blocks = ", ".join(blocks)
    instruction = (
        f"The parts {', '.join(f'/app/{n}.stl' for n in names)} lie scattered in space. Without "
        f"rotating or changing any of them, arrange them on the floor Z = 0: {told_blocks} in a row "
        f"along +X in that order, each resting on the floor with a gap of exactly {gap:g} mm (in X) "
        f"between neighbours; {told_post}"
        + ("; and put the ball on the floor to the right (+X) of the last block" if ball else "")
        + ". No two parts may overlap. Save the scene as one mesh file /app/scene.glb (or any format "
        "set in `submit`), each part its own body.")
    return Design(
        f"Arrange {len(names)} parts", instruction,
        LAYOUT.format(names=names) + "\n".join(code)
        + "\ntrimesh.util.concatenate(list(parts.values())).export('scene.glb')\n", "scene.glb",
        inputs={f"{n}.stl": export(m, "stl") for n, m in meshes.items()}, real=ball,
        hidden={f"parts/{n}.stl": export(m, "stl") for n, m in meshes.items()},
        settings={"score": "scene", "bodies": len(names),
                  "scene": {"parts": {n: f"parts/{n}.stl" for n in names}, "floor_z": 0.0,
                            "relations": relations}},
        target=b"", tags=("scene",))


def design(rng: random.Random) -> Design:
    sizes = [float(rng.randrange(10, 31, 2)) for _ in range(rng.randint(2, 4))]
    return scene(sizes, float(rng.choice((2, 5, 10))), rng.random() < 0.5, rng.random() < 0.3)
