"""Task families where the scene's layout decides: nodes placed (``scene``) and lit
(``lighting``)."""

from __future__ import annotations

import random

from taskgym.domains.game.generators.scene_text import FLOOR, Made, ground, tscn, v3, xf

__all__ = ["lighting", "scene"]


def scene(r: random.Random) -> Made:
    off = (r.randint(-5, 5), 0, r.randint(-5, 5))
    pos = (r.randint(-4, 4), r.randint(1, 4), r.randint(-4, 4))
    ext, layer, up = round(r.uniform(0.3, 1.5), 2), r.choice([2, 4, 8, 16]), r.randint(1, 3)
    group = r.choice(["crates", "loot", "props", "pickups"])
    base = [("Main", "Spatial", None, {}), ("Props", "Spatial", ".", {"transform": xf(*off)})]
    crate_local = tuple(p - o for p, o in zip(pos, off, strict=True))
    solved = base + [
        ("Crate", "StaticBody", "Props", {"transform": xf(*crate_local), "collision_layer": str(layer)}),
        ("Shape", "CollisionShape", "Props/Crate", {"shape": "SubResource( 1 )"}),
        ("Lamp", "Spatial", "Props/Crate", {"transform": xf(0, up, 0)}),
    ]
    solved_text = tscn(solved, [("BoxShape", {"extents": v3((ext, ext, ext))})]).replace(
        '[node name="Crate" type="StaticBody" parent="Props"]',
        f'[node name="Crate" type="StaticBody" parent="Props" groups=[\n"{group}",\n]]',
    )
    instruction = (
        f"In res://main.tscn, add a StaticBody named `Crate` as a child of `Props` whose global "
        f"position is {pos}, in the group `{group}`, on collision layer value {layer} only "
        f"(collision_layer = {layer}), with a CollisionShape child `Shape` holding a BoxShape of "
        f"extents ({ext}, {ext}, {ext}). Add a Spatial `Lamp` as a child of `Crate`, {up} m "
        "directly above it. Props is not at the origin: mind local versus global positions."
    )
    body = (
        f'func evaluate(root):\n\tvar crate = node(root, "Props/Crate", "StaticBody")\n'
        f'\tif crate:\n\t\tnear("Crate global position", crate.global_transform.origin, {v3(pos)}, 0.01)\n'
        f'\t\texpect("Crate in group {group}", crate.is_in_group("{group}"))\n'
        f'\t\texpect("Crate collision layer", crate.collision_layer == {layer}, crate.collision_layer)\n'
        f'\tvar shape = node(root, "Props/Crate/Shape", "CollisionShape")\n'
        f'\tif shape:\n\t\texpect("a BoxShape", shape.shape is BoxShape)\n'
        '\t\tif shape.shape is BoxShape:\n\t\t\tnear("extents", shape.shape.extents, '
        f"{v3((ext, ext, ext))}, 0.01)\n"
        f'\tvar lamp = node(root, "Props/Crate/Lamp", "Spatial")\n'
        f'\tif lamp and crate:\n\t\tnear("Lamp above the Crate", lamp.global_transform.origin - '
        f"crate.global_transform.origin, Vector3(0, {up}, 0), 0.01)\n"
    )
    return instruction, {"main.tscn": tscn(base)}, {"main.tscn": solved_text}, body, 1, "[]"


def lighting(r: random.Random) -> Made:
    side = r.choice([-1, 1])
    lit = (side * r.randint(3, 6), 1, r.randint(-3, 3))
    dark = (-side * r.randint(3, 6), 1, r.randint(-3, 3))
    energy, rng = round(r.uniform(0.5, 3), 2), r.randint(4, 7)
    color = r.choice(["ffcc88", "88ccff", "ffffff", "ff8844", "aaffaa"])
    shadows = r.choice([True, False])
    walls = [
        ("Wall", "StaticBody", ".", {}),
        ("Shape", "CollisionShape", "Wall", {"shape": "SubResource( 2 )"}),
    ]
    subs = [FLOOR, ("BoxShape", {"extents": "Vector3( 0.2, 6, 20 )"})]
    lamp = {
        "transform": xf(lit[0], 3, lit[2]),
        "light_color": "Color( "
        + ", ".join(f"{int(color[i : i + 2], 16) / 255:.4g}" for i in (0, 2, 4))
        + ", 1 )",
        "light_energy": f"{energy:g}",
        "shadow_enabled": str(shadows).lower(),
        "omni_range": f"{rng:g}",
    }
    instruction = (
        f"res://main.tscn has a wall along the plane x = 0. Add exactly one light: an OmniLight "
        f"named `Key`, child of the root, with energy {energy}, colour #{color}, shadows "
        f"{'on' if shadows else 'off'} and range {rng}, placed so that the point {lit} is lit "
        f"(in range, nothing in between) and the point {dark} is not."
    )
    body = (
        'func evaluate(root):\n\texpect("exactly one light", lights(root).size() == 1, '
        "lights(root).size())\n"
        f'\tvar key = node(root, "Key", "OmniLight")\n\tif key:\n'
        f'\t\tnear("energy", key.light_energy, {energy}, 0.01)\n'
        f'\t\tnear("colour", key.light_color, Color("#{color}"), 0.02)\n'
        f'\t\texpect("shadows", key.shadow_enabled == {str(shadows).lower()})\n'
        f'\t\tnear("range", key.omni_range, {rng}, 0.01)\n'
        f'\texpect("{lit} is lit", is_lit(root, {v3(lit)}))\n'
        f'\texpect("{dark} is dark", not is_lit(root, {v3(dark)}))\n'
    )
    return (
        instruction,
        {"main.tscn": tscn(ground(walls), subs)},
        {"main.tscn": tscn(ground([*walls, ("Key", "OmniLight", ".", lamp)]), subs)},
        body,
        2,
        "[]",
    )
