"""Task families where the physics engine decides: bodies that must come to rest where
asked, or reach a goal (``physics``)."""

from __future__ import annotations

import random

from taskgym.domains.game.generators.scene_text import FLOOR, Made, Node, ground, tscn, v3, xf

__all__ = ["goal", "physics"]


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
