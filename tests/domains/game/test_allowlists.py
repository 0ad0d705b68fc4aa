"""The grader's allow-lists without the engine: the GDScript and text-resource readers accept
what the reference solutions use, refuse each way round a name scan, and never raise on any
text (a crash there would be a grade with no verdict that the agent chose to cause)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskgym.domains.game.verifier import INSIDE_DIR
from taskgym.paths import envs_dir

pytestmark = pytest.mark.hacks


def inside(name: str) -> ModuleType:
    """A module of the grader's folder, imported as grade.py imports it."""
    import sys

    if str(INSIDE_DIR) not in sys.path:
        sys.path.insert(0, str(INSIDE_DIR))
    return importlib.import_module(name)


gdscript, text_resources, graded_project = (inside(name) for name in
                                            ("gdscript", "text_resources", "graded_project"))
TASKS = envs_dir() / "game-godot-v0" / "tasks"
HEAD = "extends Spatial\nsignal mine\n\nfunc own():\n\tpass\n\nfunc _ready():\n\t"


def test_every_reference_script_and_scene_is_allowed() -> None:
    for task in sorted(TASKS.iterdir()):
        for folder in ("project", "solution"):
            files = {f"res://{p.name}": p.read_text() for p in (task / folder).iterdir()
                     if p.suffix in (".gd", ".tscn")}
            files.update({f"res://{p.name}": p.read_text() for p in (task / "project").iterdir()
                          if p.suffix == ".gd" and f"res://{p.name}" not in files})
            scripts = {k: v for k, v in files.items() if k.endswith(".gd")}
            assert gdscript.check_project(scripts, files) is None, task
            methods = {"open", "on_tick"}
            for path, text in files.items():
                if path.endswith(".tscn") and "ExtResource( 2 )" not in text:  # fix-load's broken scene
                    assert text_resources.check_file(path, text, set(files), methods) is None, (task, path)


@pytest.mark.parametrize("body", [
    "get_tree().quit()", 'OS.execute("sh", [])', 'call("x")', 'self.set("a", 1)', 'self["script"] = null',
    '$Goal.emit_signal("body_entered", self)', 'Input.action_press("next")', "var f = File.new()",
    '$A.connect("s", get_parent(), "own")', 'load("res://.import/x.gd")', "instance_from_id(3)",
    "var e = Expression.new()", "get_signal_connection_list(\"x\")", "var x = get_script()",
    "$A if true else get_tree()", "Engine.time_scale = 9", "PhysicsServer.area_set_param(0, 0, 0)",
    "get_viewport()", 'propagate_call("quit")', "str2var(\"Object(Expression)\")", "var \u00e9 = 1",
    "pause_mode = 2", "get_world().direct_space_state", "@onready var x = 1",
    'emit_signal("mine".replace("mine", "ready"))', 'emit_signal("mine" + "x")', "emit_signal()",
])
def test_scripts_outside_the_allow_list_are_refused(body: str) -> None:
    assert gdscript.check_project({"res://a.gd": HEAD + body}, []) is not None


@pytest.mark.parametrize("source", [
    "extends Spatial\nclass_name Mover\n", "tool\nextends Spatial\n", 'extends "res://a.gd"\n',
    "extends Spatial\nclass Inner:\n\tvar x\n", "extends Object\n", "extends AnimationPlayer\n",
])
def test_refused_keywords_and_bases(source: str) -> None:
    assert gdscript.check_project({"res://a.gd": source}, []) is not None


@pytest.mark.parametrize("body", [
    'emit_signal("mine")', 'emit_signal("mine", 1, Vector3())', 'self.emit_signal("mine")',
    'connect("mine", self, "own")', '$A/B.translation.x = 1',
    'get_node("../Ball").linear_velocity = Vector3.UP * 2', 'var d = {"a": 1}\n\tvar k = "a"\n\td[k] = 2',
    'if Input.is_action_pressed("next"):\n\t\trotate_y(deg2rad(5))', 'var s = "\u00e9"',
])
def test_scripts_inside_the_allow_list_pass(body: str) -> None:
    assert gdscript.check_project({"res://a.gd": HEAD + body}, []) is None


SCENE = "[gd_scene load_steps=2 format=2]\n"


@pytest.mark.parametrize("text", [
    '[sub_resource type="GDScript" id=1]\nscript/source = "x"\n',
    '[ sub_resource   type = "GD\\u0053cript"  id = 1 ]\n', '[sub_resource type="GD\\Script" id=1]\n',
    '[sub_resource type="NativeScript" id=1]\n', '[sub_resource type="VisualScript" id=1]\n',
    '[node name="A" type="Spatial"]\nscr ipt = SubResource( 1 )\n',
    '[node name="A" type="Spatial"]\nscript = Object(GDScript)\n', '[node name="A" type="AnimationPlayer"]\n',
    '[node name="A" type="Spatial"]\npause_mode = 2\n', '[node name="A" type="Area"]\nspace_override = 3\n',
    '[ext_resource path="res://.import/x.gd" type="Script" id=1]\n',
    '[ext_resource path="res://a.gd" type="PackedScene" id=1]\n',
    '[node name="A" type="Spatial"]\n[connection signal="ready" from="." to="." method="queue_free"]\n',
    '[node name="A" type="Spatial" instance_placeholder="res://x.tscn"]\n',
    '[node name="A" type="Spatial"]\nx = Resource( "res://x.gd" )\n', '[autoload]\n',
    '[node name="A" type="Spatial"]\nx = ExtResource( 9 )\n', '[node name="A" type=["Spatial"]]\n',
    '[node name="A" type="Spatial"]\nx = #ff0000\n', '[node name="A" type="Spatial"]\n"script" = null\n',
])
def test_scenes_outside_the_allow_list_are_refused(text: str) -> None:
    assert text_resources.check_file("res://m.tscn", SCENE + text, {"res://a.gd"}, {"own"}) is not None


def test_a_scene_with_an_external_script_passes() -> None:
    text = (SCENE + '[ext_resource path="res://a.gd" type="Script" id=1]\n\n[node name="A" type="Spatial"]\n'
            'script = ExtResource( 1 )\ngroups = [ "x", ]\n\n'
            '[connection signal="ready" from="." to="." method="own"]\n')
    assert text_resources.check_file("res://m.tscn", text, {"res://a.gd"}, {"own"}) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_the_readers_never_raise(text: str) -> None:
    for source in (text, HEAD + text, SCENE + text, SCENE + "[node " + text):
        assert isinstance(gdscript.check_project({"res://a.gd": source}, ["res://a.gd"]), (str, type(None)))
        for path in ("res://m.tscn", "res://m.tres"):
            why = text_resources.check_file(path, source, {"res://a.gd"}, {"own"})
            assert isinstance(why, (str, type(None)))


def test_deep_nesting_is_refused_not_a_crash() -> None:
    text = SCENE + '[node name="A" type="Spatial"]\nx = ' + "[" * 20000 + "]" * 20000 + "\n"
    assert text_resources.check_file("res://m.tscn", text, set(), set()) is not None


@pytest.mark.parametrize("name, content", [
    ("mover.GD", "x"), ("a.gdc", "x"), ("a.scn", "x"), ("a.res", "x"), ("a.gdns", "x"), ("lib.so", "x"),
    ("A.Tscn", "x"), (".import/a.gd", "x"), (".hidden/deep/b.tscn", "x"), ("override.cfg", "x"),
    ("b.cs", "x"), ("sub/OVERRIDE.CFG", "x"),
])
def test_files_the_engine_could_load_outside_the_list_refuse(tmp_path: Path, name: str, content: str) -> None:
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(content)
    with pytest.raises(graded_project.Refused):
        graded_project.build(tmp_path, tmp_path.parent / f"{tmp_path.name}-graded", True)


def test_links_and_no_script_tasks_refuse(tmp_path: Path) -> None:
    (tmp_path / "a.gd").write_text("extends Node\n")
    with pytest.raises(graded_project.Refused, match="without scripts"):
        graded_project.collect(tmp_path, False)
    (tmp_path / "a.gd").unlink()
    os.symlink("/etc/passwd", tmp_path / "b.tscn")
    with pytest.raises(graded_project.Refused, match="symbolic link"):
        graded_project.collect(tmp_path, True)


def test_the_graded_project_is_the_graders(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "project.godot").write_text('[autoload]\nCheat="*res://cheat.gd"\n[physics]\n3d/default_gravity=0\n')
    (app / "notes.txt").write_text("not loaded")
    (app / ".taskgym").mkdir()
    (app / ".taskgym" / "reply.json").write_text("{}")
    (app / "main.tscn").write_text(SCENE + '[node name="A" type="Spatial"]\n')
    graded_project.build(app, tmp_path / "graded", False)
    assert sorted(p.name for p in (tmp_path / "graded").rglob("*")) == ["main.tscn", "project.godot"]
    settings_text = (tmp_path / "graded" / "project.godot").read_text()
    assert "autoload" not in settings_text and "3d/default_gravity=9.8" in settings_text
    assert (tmp_path / "graded").stat().st_mode & 0o777 == 0o700
