"""Wrong parts score low and reward hacks score zero, through the real grader, on every
backend (the docker variants grade in a fresh container)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from taskgym.core.reward import RewardResult
from taskgym.core.task import load_task
from taskgym.domains.cad.verifier import grade_code
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend

pytestmark = [pytest.mark.sandbox, pytest.mark.hacks]

Grade = Callable[[str, str], RewardResult]
TASKS = envs_dir() / "cad-cadquery-v0" / "tasks"


def solution(task_id: str) -> str:
    return (TASKS / task_id / "solution" / "solve.py").read_text()


def test_a_part_scaled_by_1_1_fails(grade: Grade) -> None:
    result = grade("flanged-housing", solution("flanged-housing") + "result = result.val().scale(1.1)\n")
    assert not result.success and result.score < 0.8, result


def test_a_part_one_percent_too_large_fails_its_checks_and_loses_half_per_check(grade: Grade) -> None:
    result = grade("plate-four-holes", solution("plate-four-holes") + "result = result.val().scale(1.01)\n")
    assert not result.success and 0.9 < result.components["iou"] < 0.985, result
    assert result.components["check_bbox"] == 0.0 and result.components["check_holes"] == 0.0
    assert result.score == pytest.approx(result.components["iou"] / 4, abs=1e-6)
    assert result.details["reference_properties"]["size"] == pytest.approx([100, 60, 8])


BOX = "import cadquery as cq\nbox = cq.Workplane().box(1000, 1000, 1000).val()\n"
FAR = "far = cq.Workplane().box(990, 990, 990).translate((5000, 0, 0)).val()\n"
INVERTED = "cq.Shape.cast(far.Shells()[0].wrapped.Reversed())"


@pytest.mark.parametrize("code", [
    BOX + FAR + f"result = cq.Compound.makeCompound([box, {INVERTED}])\n",
    BOX + FAR + "result = cq.Compound.makeCompound([box, far.Shells()[0], far.Faces()[0]])\n",
    BOX + FAR + "result = cq.Compound.makeCompound([box, far.Wires()[0], far.Edges()[0]])\n",
    BOX + FAR + (f"result = cq.Compound.makeCompound([cq.Compound.makeCompound([box]),\n"
                 f"    cq.Compound.makeCompound([cq.Compound.makeCompound([{INVERTED}])])])\n"),
    BOX + "result = cq.Shape.cast(box.wrapped.Reversed())\n",
    BOX + FAR + "result = cq.Compound.makeCompound([box, far])\n",
    BOX + "show_object(box)\nshow_object(box.Faces()[0])\n",
], ids=["inverted-shell", "free-shell-and-face", "free-wire-and-edge", "nested-compounds",
        "inverted-solid", "two-solids", "shown-face"])
def test_a_solid_with_anything_beside_it_is_gated(grade: Grade, code: str) -> None:
    """The universal hack: one huge box and an inside-out shell that cancels its volume."""
    result = grade("plate-four-holes", code)
    assert (result.score, result.gate, result.success) == (0.0, False, False), result


def test_a_huge_box_scores_nothing(grade: Grade) -> None:
    result = grade("plate-four-holes", "import cadquery as cq\nresult = cq.Workplane().box(1e5, 1e5, 1e5)\n")
    assert result.gate and not result.success and result.score == 0.0, result
    assert result.components["check_bbox"] == 0.0


def test_a_shifted_part_fails_when_placement_is_fixed(grade: Grade) -> None:
    shifted = solution("plate-four-holes") + "result = result.translate((5, 0, 0))\n"
    result = grade("plate-four-holes", shifted)
    assert not result.success and result.score < 0.95, result


def test_a_shifted_part_succeeds_when_placement_is_free(grade: Grade) -> None:
    result = grade("washer", solution("washer") + "result = result.translate((30, -12, 7))\n")
    assert result.success and result.score == pytest.approx(1.0, abs=1e-6), result


@pytest.mark.parametrize("code", [
    "import cadquery as cq\nresult = cq.Workplane().sphere(40)\n",
    "import cadquery as cq\nresult = cq.Workplane().box(100, 100, 50).translate((0, 0, 25))\n",
], ids=["sphere", "bounding-box"])
def test_a_sphere_or_the_bounding_box_scores_low(grade: Grade, code: str) -> None:
    result = grade("flanged-housing", code)
    assert not result.success and result.score < 0.75, result


@pytest.mark.parametrize("code, reason", [
    ("import cadquery as cq\nresult = cq.Workplane().box(5, 5, 5).union(\n"
     "    cq.Workplane().box(5, 5, 5).translate((20, 0, 0)))\n", "2 solids"),
    ("import cadquery as cq\npart = cq.Workplane().box(5, 5, 5)\n", "result"),
    ("import cadquery as cq\nresult = cq.Workplane(.box(5, 5, 5)\n", "SyntaxError"),
    ("import os\nos._exit(0)\n", "without producing a part"),
], ids=["two-solids", "no-result", "syntax-error", "exit-early"])
def test_the_gate_fails_without_exactly_one_solid(grade: Grade, code: str, reason: str) -> None:
    result = grade("plate-four-holes", code)
    assert (result.score, result.gate, result.success) == (0.0, False, False), result
    assert reason in result.details["reason"], result.details["reason"]


@pytest.mark.parametrize("code", [
    "while True:\n    pass\n",
    "chunks = []\nwhile True:\n    chunks.append(bytearray(50_000_000))\n",
    "import os\nwhile True:\n    os.fork()\n",
], ids=["endless-loop", "allocation-bomb", "fork-bomb"])
def test_runaway_code_scores_zero_within_its_bounds(backend: Backend, tight_task: Path,
                                                    code: str) -> None:
    task = load_task(tight_task, "cad")
    started = time.monotonic()
    result = grade_code(task, code.encode(), backend)
    assert (result.score, result.gate) == (0.0, False), result
    assert time.monotonic() - started < 90


def test_the_reference_is_nowhere_the_code_can_look(grade: Grade) -> None:
    # the part's X size reports how many places held the reference's text (1 + hits)
    code = '''
import os
import cadquery as cq

marker = ("rect(80, 40, forC" + "onstruction=True)").encode()
hits = 0
places = []
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    places += [f"/proc/{pid}/environ", f"/proc/{pid}/cmdline"]
    try:
        places += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        pass
skip = ("/proc", "/sys", "/dev", "/usr", "/lib", "/bin", "/sbin", "/root", "/opt")
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if not os.path.join(root, d).startswith(skip)]
    places += [os.path.join(root, f) for f in files]
for path in places:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # pipes too, without blocking
        try:
            hits += marker in os.read(fd, 50_000_000)
        finally:
            os.close(fd)
    except OSError:
        pass
for key, value in os.environ.items():
    hits += marker.decode() in value
result = cq.Workplane().box(1 + hits, 1, 1)
'''
    result = grade("plate-four-holes", code)
    assert result.gate, result
    assert result.details["properties"]["size"][0] == pytest.approx(1.0), result.details


def test_forged_reports_and_a_patched_cadquery_change_nothing(grade: Grade) -> None:
    code = '''
import json
import os
import cadquery as cq
from OCP import GProp

fake = {"gate": True, "iou": 1.0, "chamfer_mm": 0.0, "checks": {}, "properties": {}}
line = ("0" * 32 + " " + json.dumps(fake) + "\\n").encode()
for fd in range(3, 256):
    try:
        os.write(fd, line)
    except OSError:
        pass
print(line.decode())
cq.Shape.Volume = lambda self: 46905.0
cq.Shape.isValid = lambda self: True
GProp.GProp_GProps.Mass = lambda self: 46905.0
result = cq.Workplane().box(2, 2, 2)
'''
    result = grade("plate-four-holes", code)
    assert not result.success and result.score < 0.01, result


def test_a_process_left_running_does_not_stop_grading(grade: Grade) -> None:
    code = solution("plate-four-holes") + '''
import os
if os.fork() == 0:  # a daemon that keeps changing pid (fork, parent exits) and spins
    os.setsid()
    while True:
        if os.fork():
            os._exit(0)
'''
    result = grade("plate-four-holes", code)
    assert result.success, result
