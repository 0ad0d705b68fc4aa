"""Seeded task families of ``game-godot-v0``: each ``generate(name, seed, dest)`` writes a task
folder: ``project/`` (the agent's /app), ``solution/`` (files that solve it), ``tests/check.gd``
(the hidden check, run by the grading harness)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

from taskgym.core.task_folder import task_toml, write_task_folder

__all__ = ["FAMILIES", "generate"]

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


def goal(r: random.Random) -> Made:
    """A ball at rest must reach a goal Area within 3 s: it needs a starting velocity."""
    radius, dist, side = round(r.uniform(0.3, 0.5), 2), r.randint(4, 9), r.choice([-1, 1])
    start = (r.randint(-3, 3), round(0.5 + radius, 2), r.randint(-3, 3))
    target = (start[0] + side * dist, 1, start[2])
    nodes = ground(
        [
            ("Goal", "Area", ".", {"transform": xf(*target)}),
            ("Shape", "CollisionShape", "Goal", {"shape": "SubResource( 3 )"}),
        ]
    )
    ball: Node = ("Ball", "RigidBody", ".", {"transform": xf(*start)})
    shape: Node = ("Shape", "CollisionShape", "Ball", {"shape": "SubResource( 2 )"})
    subs = [
        FLOOR,
        ("SphereShape", {"radius": f"{radius:g}"}),
        ("BoxShape", {"extents": "Vector3( 1, 1, 1 )"}),
    ]
    solved: Node = (*ball[:3], {**ball[3], "linear_velocity": v3((side * 5.0, 0, 0))})
    instruction = (
        f"In res://main.tscn the Ball rests on the floor at {start}. Make it reach the Area `Goal` "
        "within 3 s (180 physics frames) without moving the Ball's start, the Goal or the Floor "
        "and without scripts: give it a starting velocity."
    )
    body = (
        'var entered = 0\n\n\nfunc setup(root):\n'
        '\tvar ball = root.get_node_or_null("Ball")\n'
        f'\texpect("Ball starts at {start}", ball != null and ball.global_transform.origin.distance_to('
        f'{v3(start)}) < 0.01)\n\n\n'
        'func step(root, _frame):  # the overlap the physics engine keeps, not a signal\n'
        '\tvar goal = root.get_node_or_null("Goal")\n\tvar ball = root.get_node_or_null("Ball")\n'
        '\tif goal is Area and ball is PhysicsBody and goal.overlaps_body(ball):\n\t\tentered += 1\n\n\n'
        'func evaluate(root):\n\tvar ball = node(root, "Ball", "RigidBody")\n\tif ball:\n'
        '\t\texpect("the Ball has no script", ball.get_script() == null)\n'
        f'\t\texpect("the Ball travelled towards the Goal", {side} * (ball.global_transform.origin.x - '
        f'{start[0]}) > {dist - 1.5})\n\tvar goal = node(root, "Goal", "Area")\n'
        f'\tif goal:\n\t\tnear("Goal not moved", goal.global_transform.origin, {v3(target)}, 0.001)\n'
        '\texpect("the Ball entered the Goal", entered > 0, entered)\n'
    )
    return (
        instruction,
        {"main.tscn": tscn([*nodes, ball, shape], subs)},
        {"main.tscn": tscn([*nodes, solved, shape], subs)},
        body,
        180,
        "[]",
    )


def physics(r: random.Random) -> Made:
    half = round(r.uniform(0.3, 0.6), 2)
    if r.random() < 0.3:
        return goal(r)
    if r.random() < 0.5:  # a floor without collision: the ball falls through it
        x, z = r.randint(-5, 5), r.randint(-5, 5)
        ball = [
            ("Ball", "RigidBody", ".", {"transform": xf(x, 4, z)}),
            ("Shape", "CollisionShape", "Ball", {"shape": "SubResource( 2 )"}),
        ]
        subs = [FLOOR, ("SphereShape", {"radius": f"{half:g}"})]
        instruction = (
            "In res://main.tscn the Ball falls through the floor. Fix the scene (not the Ball) so "
            "that the Ball lands and rests on the Floor's top face (y = 0.5)."
        )
        body = (
            f'func evaluate(root):\n\tvar ball = node(root, "Ball", "RigidBody")\n\tif ball:\n'
            '\t\tnear("Ball rests on the floor", ball.global_transform.origin, '
            f"{v3((x, 0.5 + half, z))}, 0.05)\n"
            f'\t\texpect("Ball is still", ball.linear_velocity.length() < 0.05, ball.linear_velocity)\n'
        )
        return (
            instruction,
            {"main.tscn": tscn(ground(ball, shape=False), subs)},
            {"main.tscn": tscn(ground(ball), subs)},
            body,
            240,
            "[]",
        )
    p = (r.randint(-6, 6), round(r.uniform(1, 3), 1), r.randint(-6, 6))
    platform = [
        ("Platform", "StaticBody", ".", {"transform": xf(*p)}),
        ("Shape", "CollisionShape", "Platform", {"shape": "SubResource( 2 )"}),
    ]
    subs = [
        FLOOR,
        ("BoxShape", {"extents": "Vector3( 1.5, 0.25, 1.5 )"}),
        ("BoxShape", {"extents": v3((half,) * 3)}),
    ]
    crate = [("Crate", "RigidBody", ".", {"transform": xf(0, 6, 0)})]
    solved = [
        ("Crate", "RigidBody", ".", {"transform": xf(p[0], p[1] + 3, p[2])}),
        ("Shape", "CollisionShape", "Crate", {"shape": "SubResource( 3 )"}),
    ]
    rest = p[1] + 0.25 + half
    instruction = (
        f"In res://main.tscn, make the RigidBody `Crate` fall onto the `Platform` and come to rest "
        f"on it within 4 s (240 physics frames at 60 fps). Give it a CollisionShape `Shape` with a "
        f"BoxShape of extents ({half}, {half}, {half}); do not move the Platform or the Floor."
    )
    body = (
        f'func evaluate(root):\n\tvar crate = node(root, "Crate", "RigidBody")\n\tif crate:\n'
        f"\t\tvar at = crate.global_transform.origin\n"
        f'\t\tnear("Crate rests on top of the Platform", at.y, {rest:g}, 0.05)\n'
        f'\t\texpect("Crate is over the Platform", abs(at.x - {p[0]}) < 1.5 and abs(at.z - '
        f"{p[2]}) < 1.5, at)\n"
        f'\t\texpect("Crate is still", crate.linear_velocity.length() < 0.05, crate.linear_velocity)\n'
        f'\tvar plat = node(root, "Platform", "StaticBody")\n'
        f'\tif plat:\n\t\tnear("Platform not moved", plat.global_transform.origin, {v3(p)}, 0.001)\n'
    )
    return (
        instruction,
        {"main.tscn": tscn(ground([*platform, *crate]), subs)},
        {"main.tscn": tscn(ground([*platform, *solved]), subs)},
        body,
        240,
        "[]",
    )


COUNTER = "extends Node\n\nvar count = 0\n"
MOVER = (
    "extends Spatial\n\nexport var speed = {speed}\n{head}\n\n"
    "func _physics_process(delta){colon}\n\t{target}.translation.x += speed * delta\n"
)


def logic(r: random.Random) -> Made:
    kind = r.choice(["door", "timer", "machine"])
    if kind == "door":
        t, h = (r.randint(-5, 5), 1, r.randint(-5, 5)), r.randint(3, 6)
        nodes = ground(
            [
                ("Trigger", "Area", ".", {"transform": xf(*t)}),
                ("Shape", "CollisionShape", "Trigger", {"shape": "SubResource( 2 )"}),
                ("Player", "RigidBody", ".", {"transform": xf(t[0], 5, t[2])}),
                ("Shape", "CollisionShape", "Player", {"shape": "SubResource( 3 )"}),
            ]
        )
        subs = [
            FLOOR,
            ("BoxShape", {"extents": "Vector3( 1.5, 1, 1.5 )"}),
            ("SphereShape", {"radius": "0.4"}),
        ]
        door = ("Door", "Spatial", ".", {"transform": xf(t[0] + 3, 1, t[2])})
        script = f"extends Spatial\n\n\nfunc open(_body):\n\ttranslation.y = {h}\n"
        solved = tscn(
            [*nodes, (*door[:3], {**door[3], "script": "ExtResource( 1 )"})],
            subs,
            [("res://door.gd", "Script")],
            [("body_entered", "Trigger", "Door", "open")],
        )
        instruction = (
            f"In res://main.tscn the Player falls into the Area `Trigger`. Make the `Door` open when "
            f"a body enters the Trigger: its y position must become {h} (and stay 1 until then). "
            "Write the logic in res://door.gd, attach it to Door and connect the Trigger's signal."
        )
        body = (
            'func setup(root):\n\tvar door = root.get_node_or_null("Door")\n'
            '\texpect("Door starts closed", door != null and door.translation.y < 1.01)\n\n'
            f'func evaluate(root):\n\tvar door = node(root, "Door", "Spatial")\n\tif door:\n'
            f'\t\tnear("Door opened", door.translation.y, {h}, 0.01)\n'
            '\tvar trig = node(root, "Trigger", "Area")\n\tif trig:\n'
            '\t\texpect("Trigger signal connected", '
            'trig.get_signal_connection_list("body_entered").size() > 0)\n'
        )
        return (
            instruction,
            {"main.tscn": tscn([*nodes, door], subs)},
            {"main.tscn": solved, "door.gd": script},
            body,
            120,
            "[]",
        )
    if kind == "timer":
        wait, k = r.choice([0.25, 0.5, 0.75]), r.randint(2, 6)
        frames = int(60 * wait * (k + 0.5))
        nodes = [
            ("Main", "Node", None, {}),
            ("Tick", "Timer", ".", {"wait_time": f"{wait:g}", "autostart": "true"}),
            ("Counter", "Node", ".", {"script": "ExtResource( 1 )"}),
        ]
        script = COUNTER + "\n\nfunc on_tick():\n\tcount += 1\n"
        instruction = (
            f"In res://main.tscn the Timer `Tick` fires every {wait} s. Make `Counter.count` "
            "(res://counter.gd) "
            "increase by one each time it fires: add a method to the script and connect the signal."
        )
        body = (
            f'func evaluate(root):\n\tvar counter = node(root, "Counter", "Node")\n\tif counter:\n'
            f'\t\texpect("count is {k} after {frames} frames", counter.get("count") == {k}, '
            'counter.get("count"))\n'
        )
        project = {"main.tscn": tscn(nodes, exts=[("res://counter.gd", "Script")]), "counter.gd": COUNTER}
        solution = {
            "main.tscn": tscn(
                nodes,
                exts=[("res://counter.gd", "Script")],
                connections=[("timeout", "Tick", "Counter", "on_tick")],
            ),
            "counter.gd": script,
        }
        return instruction, project, solution, body, frames, "[]"
    presses = r.choice([1, 2, 4, 5, 7, 8])  # never a multiple of 3: the untouched machine stays idle
    starts = [10 + 12 * i + r.randint(0, 4) for i in range(presses)]
    inputs = [[f, "next", True] for f in starts] + [[f + 4, "next", False] for f in starts]
    states = ["idle", "walk", "run"]
    nodes = [("Main", "Node", None, {}), ("Machine", "Node", ".", {"script": "ExtResource( 1 )"})]
    stub = 'extends Node\n\nvar state = "idle"\n'
    script = stub + (
        "var was_pressed = false\n\n\nfunc _physics_process(_delta):\n\tvar now = "
        'Input.is_action_pressed("next")\n'
        '\tif now and not was_pressed:\n\t\tstate = {"idle": "walk", "walk": "run", "run": "idle"}[state]\n'
        "\twas_pressed = now\n"
    )
    instruction = (
        "Write res://machine.gd (attached to `Machine` in res://main.tscn): a state machine whose `state` "
        'starts "idle" and, on each press of the input action `next` (the moment '
        'Input.is_action_pressed("next") becomes true), goes idle -> walk -> run -> idle.'
    )
    body = (
        f'func evaluate(root):\n\tvar m = node(root, "Machine", "Node")\n\tif m:\n'
        f'\t\texpect("state after {presses} presses", m.get("state") == '
        f'"{states[presses % 3]}", m.get("state"))\n'
    )
    project = {"main.tscn": tscn(nodes, exts=[("res://machine.gd", "Script")]), "machine.gd": stub}
    return (
        instruction,
        project,
        {"machine.gd": script},
        body,
        starts[-1] + 10,
        str(inputs).replace("True", "true").replace("False", "false"),
    )


def fix(r: random.Random) -> Made:
    kind = r.choice(["syntax", "path", "signal", "load"])
    speed = r.randint(1, 5)
    good = MOVER.format(speed=speed, head="", colon=":", target="self").replace("self.", "")
    nodes = [
        ("Main", "Spatial", None, {}),
        ("Mover", "Spatial", ".", {"script": "ExtResource( 1 )"}),
        ("Mesh", "MeshInstance", "Mover", {}),
    ]
    scene_text = tscn(nodes, exts=[("res://mover.gd", "Script")])
    body = (
        f'func evaluate(root):\n\tvar mover = node(root, "Mover", "Spatial")\n\tif mover:\n'
        f'\t\tnear("Mover moved {speed} m in 1 s", mover.translation.x, {speed}, '
        f"{speed * 2 / 60 + 0.01:.3f})\n"
    )
    what = f"`Mover` should move along +x at {speed} m/s but"
    if kind == "syntax":
        broken = MOVER.format(speed=speed, head="", colon="", target="self").replace("self.", "")
        return (
            f"In res://main.tscn {what} its script has an error. Fix res://mover.gd.",
            {"main.tscn": scene_text, "mover.gd": broken},
            {"mover.gd": good},
            body,
            60,
            "[]",
        )
    if kind == "path":
        head = '\nonready var body = get_node("Body")'
        fixed = MOVER.format(speed=speed, head=head.replace("Body", "Mesh"), colon=":", target="body")
        body = body.replace(
            '"Mover", "Spatial")\n\tif mover:\n\t\tnear("Mover',
            '"Mover/Mesh", "MeshInstance")\n\tif mover:\n\t\tnear("Mesh',
        )
        return (
            f"In res://main.tscn the mesh of {what.replace('`Mover`', '`Mover`s child `Mesh`')} the script "
            "res://mover.gd fails at run time. Fix the script (keep the scene's node names).",
            {
                "main.tscn": scene_text,
                "mover.gd": MOVER.format(speed=speed, head=head, colon=":", target="body"),
            },
            {"mover.gd": fixed},
            body,
            60,
            "[]",
        )
    if kind == "signal":
        instruction, project, solution, check, frames, inputs = logic(random.Random(f"timer-{r.random()}"))
        while "Tick" not in project["main.tscn"]:
            instruction, project, solution, check, frames, inputs = logic(random.Random(r.random()))
        project["counter.gd"] = solution["counter.gd"]
        return (
            "In res://main.tscn `Counter.count` should count the Timer `Tick`'s timeouts, but it stays 0. "
            "Find out why and fix it.",
            project,
            {"main.tscn": solution["main.tscn"]},
            check,
            frames,
            inputs,
        )
    broken = scene_text.replace("ExtResource( 1 )", "ExtResource( 2 )").replace(
        'parent="Mover"', 'parent="Mover/Body"'
    )
    return (
        f"res://main.tscn does not load any more: {what} the scene file is damaged. Repair it (the Mesh is "
        "a child of Mover, and Mover runs res://mover.gd).",
        {"main.tscn": broken, "mover.gd": good},
        {"main.tscn": scene_text},
        body,
        60,
        "[]",
    )


BUILDERS: dict[str, Callable[[random.Random], Made]] = {
    "scene": scene,
    "lighting": lighting,
    "physics": physics,
    "logic": logic,
    "fix": fix,
}
FAMILIES = tuple(BUILDERS)


def generate(name: str, seed: int, dest: Path) -> None:
    """Write task ``<name>-<seed>`` at ``dest``."""
    instruction, project, solution, body, frames, inputs = BUILDERS[name](random.Random(f"{name}:{seed}"))
    scripts = "logic" if name in ("logic", "fix") else "none"
    files = {f"project/{k}": v for k, v in project.items()}
    files["project/project.godot"] = SETTINGS.format(name=f"{name}-{seed}")
    files.update({f"solution/{k}": v for k, v in solution.items()})
    files["tests/check.gd"] = CHECK.format(frames=frames, inputs=inputs, body=body)
    files["instruction.md"] = (
        instruction + "\n\nThe Godot 3 project is /app (res://). Physics runs at 60 "
        "fixed frames per second; a hidden check run by the engine decides. The grader loads "
        "only .tscn, .tres and .gd files from visible folders, with its own project.godot (no "
        "autoloads, default physics)"
        + (", and this task allows no scripts" if scripts == "none" else
           "; scripts may use the node and math API on the grader's allow-list (no get_tree, "
           "OS, File, Engine, ClassDB, dynamic call/set/get)")
        + ".\n"
    )
    config = task_toml(category=name, tags=("godot",),
                       limits={"max_steps": 40, "timeout_sec": 900, "command_timeout_sec": 60,
                               "verifier_timeout_sec": 60, "memory_mb": 1024},
                       tables={"game": {"scripts": scripts}})
    write_task_folder(dest, files.pop("instruction.md"), config, files)
