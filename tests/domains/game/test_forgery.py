"""The forgery classes of the game grader (the security issue's items 4-8), through the real
grader on every backend: rewriting the engine's output, every way of getting code past a name
scan (a .import folder, .GD, spaced or escaped embedded scripts, binary scenes, spaced
autoloads, hidden scripts lying about their class, .gdc), pausing or speeding the frame
count, changing gravity, forging body_entered, forged reasons reaching the agent, malformed
tool replies, and a "no script" task passed by another node's script."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskgym.domains.game import GameEnv
from taskgym.domains.game import verifier as game_verifier
from taskgym.sandbox.grading import GraderRun

from .conftest import Play, solution

pytestmark = pytest.mark.hacks

MOVER_TASK = "fix-100"  # Mover must move 5 m along +x in 1 s; the null project fails that check
GOAL_TASK = "physics-101"  # "no script": the Ball (x = 2) must roll into the Goal at x = -7
REWRITE = (  # the published attack: after the report, rewrite the engine's captured stdout
    "extends Spatial\n\nfunc _exit_tree():\n\tvar f = File.new()\n"
    '\tif f.open("/proc/self/fd/1", File.READ_WRITE) == OK:\n\t\tvar text = f.get_as_text()\n'
    '\t\tf.seek(0)\n\t\tf.store_string(text.replace("\\"passed\\":false", "\\"passed\\":true "))\n'
    "\t\tf.close()\n"
)
CHEAT = "extends Spatial\n\nfunc _physics_process(_d):\n\ttranslation.x = 5\n"
"""Passes fix-100 if it runs as the Mover's script... and it is allowed: what matters is that
each attack below gets code past the grader that it would not otherwise allow."""
SCENE = ('[gd_scene load_steps=2 format=2]\n\n{ext}\n[node name="Main" type="Spatial"]\n\n'
         '[node name="Mover" type="Spatial" parent="."]\nscript = {ref}\n\n'
         '[node name="Mesh" type="MeshInstance" parent="Mover"]\n')


def scene(ext: str, ref: str = "ExtResource( 1 )") -> str:
    return SCENE.format(ext=ext, ref=ref)


def refused(result: Any) -> bool:
    return result.score == 0.0 and str(result.details.get("reason")).startswith("the project was refused")


def test_rewriting_the_engines_output_is_refused(play: Play) -> None:
    assert refused(play(MOVER_TASK, {"mover.gd": REWRITE}))


ESCAPE = str.maketrans({"\n": "\\n", "\t": "\\t"})
SPACED = '[ sub_resource   type = "GDScript"  id = 1 ]\nscript/source = "{src}"\n'
ESCAPED = '[sub_resource type="GD\\u0053cript" id=1]\nscript/source = "{src}"\n'
BYPASSES: dict[str, dict[str, str]] = {
    "import-folder": {".import/cheat.gd": REWRITE,
                      "main.tscn": scene('[ext_resource path="res://.import/cheat.gd" type="Script" id=1]')},
    "upper-case-GD": {"cheat.GD": REWRITE,
                      "main.tscn": scene('[ext_resource path="res://cheat.GD" type="Script" id=1]')},
    "embedded-spaced": {"main.tscn": scene(SPACED.format(src=CHEAT.translate(ESCAPE)),
                                           "SubResource( 1 )")},
    "embedded-escaped": {"main.tscn": scene(ESCAPED.format(src=CHEAT.translate(ESCAPE)),
                                            "SubResource( 1 )")},
    "binary-scn": {"main.scn": "RSRC\x00\x00\x00\x00", "main.tscn": scene(
        '[ext_resource path="res://main.scn" type="PackedScene" id=1]', "null")},
    "binary-res": {"cheat.res": "RSRC\x00\x00\x00\x00"},
    "hidden-lying-class": {".hidden/mover.gd": "extends Spatial\nclass_name Mover\n" + CHEAT[16:]},
    "compiled-gdc": {"mover.gdc": "GDSC\x00\x00\x00\x00"},
    "override-cfg": {"override.cfg": '[autoload]\nCheat="*res://cheat.gd"\n', "cheat.gd": REWRITE},
    "class-name": {"mover.gd": "extends Spatial\nclass_name Mover\n" + CHEAT[16:]},
}


@pytest.mark.parametrize("files", BYPASSES.values(), ids=BYPASSES.keys())
def test_code_a_name_scan_misses_is_refused(play: Play, files: dict[str, str]) -> None:
    assert refused(play(MOVER_TASK, files))


@pytest.mark.parametrize("settings", [
    '[ autoload ]\n\n Cheat = "*res://cheat.gd"\n', '[autoload]\nCheat ="*res://cheat.gd"\n',
    '\n  [autoload]\n\tCheat="*res://cheat.gd"\n',
], ids=["spaced-brackets", "spaced-key", "leading-spaces"])
def test_spaced_autoloads_never_run(play: Play, settings: str) -> None:
    """project.godot is the grader's: an autoload that would move the Mover never loads."""
    cheat = 'extends Node\n\nfunc _physics_process(_d):\n\tget_node("/root/Main/Mover").translation.x = 5\n'
    result = play(MOVER_TASK, {"project.godot": "config_version=4\n\n" + settings, "cheat.gd": cheat})
    assert result.score == 0.0 and "moved 5 m" in str(result.details.get("reason")), result


@pytest.mark.parametrize("ready", [
    "\tget_tree().paused = true", '\tget_tree().emit_signal("physics_frame")',
    '\tfor i in range(500):\n\t\tget_tree().emit_signal("physics_frame")', "\tEngine.time_scale = 100",
    '\tPhysicsServer.area_set_param(get_world().space, 1, Vector3(1, 0, 0))',
], ids=["pause", "emit-physics-frame", "emit-many", "time-scale", "physics-server"])
def test_stopping_or_speeding_time_is_refused(play: Play, ready: str) -> None:
    assert refused(play(MOVER_TASK, {"mover.gd": f"extends Spatial\n\nfunc _ready():\n{ready}\n"}))


@pytest.mark.parametrize("ready", [
    '\tvar k = "pause" + "_mode"\n\tself[k] = 2',
    '\tvar k = "space_" + "override"\n\tvar a = Area.new()\n\tget_parent().get_parent().add_child(a)\n'
    '\ta[k] = 3',
    '\tvar k = "scr" + "ipt"\n\tget_node("Mesh")[k] = preload("res://other.gd")',
], ids=["pause-mode", "area-gravity-beside-the-scene", "script-swap"])
def test_a_property_set_by_a_computed_name_is_caught_while_playing(play: Play, ready: str) -> None:
    """The allow-list cannot see a subscript key built at run time; the harness checks what
    it could change every frame, over the whole tree."""
    code = f"extends Spatial\n\nfunc _ready():\n{ready}\n"
    result = play(MOVER_TASK, {"mover.gd": code, "other.gd": "extends Spatial\n"})
    assert result.score == 0.0 and result.details.get("cause") == "world", result


GOAL_NODE = '[node name="Goal" type="Area" parent="."]'


def goal_scene(env: GameEnv, extra: str) -> str:
    text = env.task_set.get(GOAL_TASK).path.joinpath("project", "main.tscn").read_text()
    return text.replace(GOAL_NODE, GOAL_NODE + "\n" + extra)


@pytest.mark.parametrize("physics", [
    "3d/default_gravity_vector=Vector3( -1, 0, 0 )", "3d/default_gravity=0\n3d/default_linear_damp=0",
    "3d/default_gravity_vector=Vector3( -1, -0.1, 0 )\n3d/default_gravity=30",
], ids=["towards-goal", "zero", "strong-towards-goal"])
def test_project_gravity_is_the_graders(play: Play, physics: str) -> None:
    settings = f'config_version=4\n\n[application]\n\nconfig/name="x"\n\n[physics]\n\n{physics}\n'
    result = play(GOAL_TASK, {"project.godot": settings})
    assert result.score == 0.0 and "entered the Goal" in str(result.details.get("reason")), result


@pytest.mark.parametrize("props", [
    "space_override = 3\ngravity_vec = Vector3( -1, 0, 0 )\ngravity = 50",
    "pause_mode = 2",
], ids=["area-gravity-override", "pause-mode"])
def test_scene_physics_overrides_are_refused(play: Play, game_env: GameEnv, props: str) -> None:
    assert refused(play(GOAL_TASK, {"main.tscn": goal_scene(game_env, props)}))


def test_a_no_script_task_refuses_another_nodes_script(play: Play, game_env: GameEnv) -> None:
    push = 'extends StaticBody\n\nfunc _ready():\n\tget_node("../Ball").linear_velocity = Vector3(-5, 0, 0)\n'
    text = goal_scene(game_env, "").replace(
        '[node name="Floor" type="StaticBody" parent="."]',
        '[node name="Floor" type="StaticBody" parent="."]\nscript = ExtResource( 1 )')
    text = text.replace("load_steps=4 format=2]\n", 'load_steps=5 format=2]\n\n'
                        '[ext_resource path="res://push.gd" type="Script" id=1]\n')
    result = play(GOAL_TASK, {"push.gd": push, "main.tscn": text})
    assert refused(result) and "without scripts" in str(result.details.get("reason")), result


def test_a_forged_body_entered_is_refused_and_not_trusted(play: Play, game_env: GameEnv) -> None:
    forge = ('extends Area\n\nfunc _physics_process(_d):\n'
             '\temit_signal("body_entered", get_node("../Ball"))\n')
    text = goal_scene(game_env, "script = ExtResource( 1 )").replace(
        "load_steps=4 format=2]\n", 'load_steps=5 format=2]\n\n'
        '[ext_resource path="res://forge.gd" type="Script" id=1]\n')
    assert refused(play(GOAL_TASK, {"forge.gd": forge, "main.tscn": text}))
    source = game_env.task_set.get(GOAL_TASK).path.joinpath("tests", "check.gd").read_text()
    assert "connect(" not in source and "overlaps_body" in source  # the check reads state


def test_the_oracle_of_the_goal_task_still_passes(play: Play, game_env: GameEnv) -> None:
    assert play(GOAL_TASK, solution(game_env, GOAL_TASK)).score == 1.0


def test_what_project_code_prints_never_reaches_the_agent(game_env: GameEnv) -> None:
    marker = "FORGED-REASON-0f3c"
    game_env.reset(options={"task_id": MOVER_TASK})
    code = f'extends Spatial\n\nfunc _ready():\n\tprint("{marker}")\n\tprinterr("{marker}")\n'
    game_env.step({"tool": "write_file", "args": {"path": "mover.gd", "content": code}})
    obs, _, terminated, _, info = game_env.step({"tool": "submit", "args": {}})
    assert terminated and info["reward"].score == 0.0
    assert marker not in json.dumps(obs, default=str) and marker not in repr(info)


FORGED: list[dict[str, Any]] = [
    {"gate": False, "cause": "no-report", "reason": "SECRET func evaluate", "log": "SECRET"},
    {"gate": False, "cause": "SECRET func evaluate"},
    {"gate": True, "checks": [{"name": "SECRET func evaluate(root):", "passed": True}]},
    {"gate": True, "checks": [{"name": "Mover/Mesh is a MeshInstance", "passed": True, "detail": "SECRET"}],
     "reason": "SECRET"},
    {"gate": True, "checks": [{"name": "Mover/Mesh is a MeshInstance", "passed": "SECRET"}]},
    {"gate": True, "SECRET": 1, "checks": [{"name": "Mover/Mesh is a MeshInstance", "passed": True}]},
    {"gate": "SECRET"},
]


@pytest.mark.parametrize("record", FORGED)
def test_text_in_the_graders_record_never_reaches_the_agent(
        game_env: GameEnv, monkeypatch: pytest.MonkeyPatch, record: dict[str, Any]) -> None:
    """Whatever the record says (as if project code had forged it), the result shows only
    names the check's source declares and the host's fixed reasons."""
    real = game_verifier.run_grader

    def forged(*args: Any, **kwargs: Any) -> GraderRun:
        run = real(*args, **kwargs)
        run.records[:] = [{"phase": "begun"}, {"phase": "started"}, {**record, "final": True}]
        return run

    monkeypatch.setattr(game_verifier, "run_grader", forged)
    game_env.reset(options={"task_id": MOVER_TASK})
    obs, _, _, _, info = game_env.step({"tool": "submit", "args": {}})
    assert "SECRET" not in json.dumps(obs, default=str) and "SECRET" not in repr(info)
    if record.get("checks") and record["checks"][0].get("passed") is True and "detail" in record["checks"][0]:
        assert info["reward"].details["checks"] == [{"name": "Mover/Mesh is a MeshInstance", "passed": True}]


REPLY = 'extends Spatial\n\nfunc _ready():\n\tvar f = File.new()\n' \
        '\tf.open(OS.get_environment("TASKGYM_GAME_REPLY"), File.WRITE)\n\t{write}\n\tf.close()\n' \
        '\tget_tree().quit()\n'
REPLIES = {
    "list": 'f.store_string("[1, 2]")', "null": 'f.store_string("null")', "number": 'f.store_string("7")',
    "string": 'f.store_string("\\"x\\"")', "ok-not-bool": 'f.store_string("{\\"ok\\": \\"yes\\"}")',
    "error-without-message": 'f.store_string("{\\"ok\\": false}")',
    "nodes-not-list": 'f.store_string("{\\"ok\\": true, \\"nodes\\": 5}")',
    "not-utf8": "f.store_buffer(PoolByteArray([123, 255, 254, 125]))",
    "huge": 'for i in range(6000):\n\t\tf.store_string("{\\"ok\\": true, \\"x\\": \\"%s\\"}" '
            '% "a".repeat(1000))',
    "empty": 'f.store_string("")',
    "link": 'f.close()\n\tOS.execute("ln", ["-sf", "/etc/passwd", '
            'OS.get_environment("TASKGYM_GAME_REPLY")], true)',
    "fifo": 'f.close()\n\tvar path = OS.get_environment("TASKGYM_GAME_REPLY")\n'
            '\tOS.execute("rm", ["-f", path], true)\n\tOS.execute("mkfifo", [path], true)',
}


@pytest.mark.parametrize("write", REPLIES.values(), ids=REPLIES.keys())
def test_a_malformed_tool_reply_is_an_error_and_the_episode_goes_on(game_env: GameEnv, write: str) -> None:
    game_env.reset(options={"task_id": MOVER_TASK})
    game_env.step({"tool": "write_file", "args": {"path": "mover.gd", "content": REPLY.format(write=write)}})
    obs, reward, terminated, truncated, info = game_env.step({"tool": "run_scene", "args": {"frames": 5}})
    assert "error" in info and not terminated and not truncated and reward == 0.0, (obs, info)
    _, _, terminated, _, info = game_env.step({"tool": "bash", "args": {"command": "echo alive"}})
    assert "error" not in info and not terminated, info


def test_the_forged_names_check_reads_the_check_source() -> None:
    source = ('func evaluate(root):\n\tvar m = node(root, "Mover/Mesh", "MeshInstance")\n'
              '\texpect("a \\"b\\"", true)\n')
    assert game_verifier.check_names(source) >= {"Mover/Mesh is a MeshInstance", 'a "b"'}
    assert "Mover is a Spatial" not in game_verifier.check_names(source)
