"""Reward hacks score zero through the real grader, on every backend: printing the marker
(or a forged report), quitting early, _notification and _get overrides, shadowing engine
methods, calling the harness, autoloads, editing the expectations, malformed scenes,
endless loops. The forgery classes of the security issue are in test_forgery.py."""

from __future__ import annotations

import json
import time

import pytest

from taskgym.domains.game.verifier import CAUSES

from .conftest import Play

pytestmark = pytest.mark.hacks

TASK = "fix-100"  # Mover must move along +x; its null project fails only that check
FAKE = json.dumps({"final": True, "ok": True, "checks": [{"name": "x", "passed": True}]})


def mover(body: str, ready: str = "") -> dict[str, str]:
    """A mover.gd that does nothing useful but runs ``ready`` in _ready and adds ``body``."""
    return {"mover.gd": f"extends Spatial\n\nfunc _ready():\n\tpass\n{ready}\n{body}\n"}


@pytest.mark.parametrize("ready", [
    '\tprint("PASS")\n\tprint("ok: all checks passed")',
    f"\tprint({FAKE!r})",
    "\tfor i in range(100):\n\t\tprint(\"%032x \" % i + " + repr(FAKE) + ")",
    f"\tprinterr({FAKE!r})",
], ids=["marker", "untagged-report", "guessed-tokens", "stderr"])
def test_printing_a_marker_or_a_report_scores_zero(play: Play, ready: str) -> None:
    result = play(TASK, mover("", ready))
    assert result.score == 0.0 and not result.success, result


@pytest.mark.parametrize("ready", [
    "\tget_tree().quit()", '\tget_tree().call("qu" + "it")',
    '\tget_tree().call_deferred("qu" + "it")', '\tvar t = get_tree()\n\tt.callv("qu" + "it", [])',
], ids=["quit", "dynamic-call", "deferred", "callv"])
def test_quitting_the_engine_early_scores_zero(play: Play, ready: str) -> None:
    result = play(TASK, mover("", ready))
    assert result.score == 0.0, result


@pytest.mark.parametrize("body", [
    "func _notification(what):\n\tif what == NOTIFICATION_PREDELETE:\n\t\tprint(\"PASS\")",
    'func _get(property):\n\tif property == "translation":\n\t\treturn Vector3(9, 9, 9)',
    "func _set(property, value):\n\treturn true",
    "func get_translation():\n\treturn Vector3(4, 0, 0)",
    "func is_class(name):\n\treturn true",
    "var translation = Vector3(4, 0, 0)",
], ids=["notification", "get", "set", "shadow-getter", "shadow-is-class", "shadow-property"])
def test_overrides_that_could_lie_to_the_check_score_zero(play: Play, body: str) -> None:
    result = play(TASK, mover(body))
    assert result.score == 0.0, result
    reason = str(result.details.get("reason"))
    assert "refused" in reason or reason == CAUSES["audit"] or "moved 5 m" in reason, result


@pytest.mark.parametrize("ready", [
    f'\tget_tree().call("_emit", "00", {FAKE})',
    f'\tget_tree().call("_emit", OS.get_environment("TASKGYM_GAME_TOKEN"), {FAKE})',
    '\tvar f = File.new()\n\tf.open(OS.get_environment("TASKGYM_GAME_TOKEN"), File.READ)\n'
    f'\tprint(f.get_as_text() + " " + {FAKE!r})',
    '\tvar f = File.new()\n\tf.open(OS.get_environment("TASKGYM_GAME_CHECK"), File.READ)\n'
    '\tprint(f.get_as_text())',
    '\tvar e = ClassDB.instance("Expr" + "ession")\n\te.parse("instance_from_id(1)")\n\tprint(e.execute())',
    '\tvar e = str2var("Object(Expression)")\n\tprint(e)',
    '\tvar os = OS\n\tos.call("exe" + "cute", "sh", ["-c", "true"], true)',
    '\tvar me = self\n\tme.set("scr" + "ipt", null)',
    '\tvar f = File.new()\n\tf.open("/pr" + "oc/self/mem", File.READ)',
], ids=["call-emit", "call-emit-env", "read-token-file", "read-check-file", "classdb-expression",
        "str2var-object", "dynamic-os-execute", "dynamic-set-script", "proc-mem"])
def test_reaching_for_the_harness_or_its_token_scores_zero(play: Play, ready: str) -> None:
    result = play(TASK, mover("", ready))
    assert result.score == 0.0, result
    assert "the project was refused" in str(result.details.get("reason")), result


@pytest.mark.parametrize("settings", [
    '\n[autoload]\n\nCheat="*res://cheat.gd"\n',
    '\n[gdnative]\n\nsingletons=[ "res://x.gdnlib" ]\n',
], ids=["autoload", "gdnative-singleton"])
def test_autoloads_and_native_singletons_score_zero(play: Play, settings: str) -> None:
    files = {"project.godot": 'config_version=4\n\n[application]\n\nconfig/name="x"\n' + settings,
             "cheat.gd": "extends Node\nfunc _init():\n\tprint(\"PASS\")\n"}
    result = play(TASK, files)  # the grader writes its own project.godot: nothing is loaded
    assert result.score == 0.0 and "moved 5 m" in str(result.details.get("reason")), result


@pytest.mark.parametrize("path", ["tests/check.gd", "checklib.gd", ".game/checklib.gd", "check.gd"])
def test_writing_a_passing_check_into_the_project_changes_nothing(play: Play, path: str) -> None:
    check = 'extends Reference\nvar scene = "res://main.tscn"\nvar frames = 1\nvar inputs = []\n' \
            'var results = [{"name": "x", "passed": true, "detail": ""}]\n' \
            'func setup(_r):\n\tpass\nfunc evaluate(_r):\n\tpass\n'
    result = play(TASK, {path: check})
    assert result.score == 0.0, result


@pytest.mark.parametrize("scene", [
    "this is not a scene\n", '[gd_scene load_steps=2 format=2]\n\n[node name="A" type="NoSuchType"]\n'
    '[node name="B" type="Spatial" parent="Nope"]\n', "",
    '[gd_scene format=2]\n[ext_resource path="res://mover.gd" type="Script" id=1]\n[node name="Main" '
    'type="Spatial"]\nscript = ExtResource( 7 )\n',
], ids=["text", "bad-types", "empty", "bad-reference"])
def test_a_malformed_scene_is_refused_and_scores_zero(play: Play, scene: str) -> None:
    result = play(TASK, {"main.tscn": scene})
    assert result.score == 0.0, result
    assert str(result.details.get("reason")).startswith("the project was refused: res://main.tscn"), result


@pytest.mark.slow
@pytest.mark.parametrize("where", ["_process(_d)", "_physics_process(_d)", "_ready()"])
def test_an_endless_loop_is_cut_and_scores_zero(play: Play, where: str) -> None:
    started = time.monotonic()
    result = play(TASK, {"mover.gd": f"extends Spatial\n\nfunc {where}:\n\twhile true:\n\t\tpass\n"})
    assert result.score == 0.0 and "ran past" in str(result.details.get("reason")), result
    assert time.monotonic() - started < 60
