"""Task families where GDScript decides: a script to write (``logic``) or to fix (``fix``)."""

from __future__ import annotations

import random

from taskgym.domains.game.generators.scene_text import FLOOR, Made, ground, tscn, xf

__all__ = ["fix", "logic"]

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
