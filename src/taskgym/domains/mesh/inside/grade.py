"""Grade a submitted mesh file against the task's hidden target, in a fresh sandbox.

Runs as ``python3 -I -B grade.py`` in a workspace whose one file is the submission (its name
gives its format), with this sandbox's own, unpatched trimesh and
manifold3d: the agent's file is only data here (nothing of the agent's runs), read under
size, face-count and memory bounds. The settings and the target meshes come from the grading
kit's secret (``gradekit``: they are never files in any sandbox); the kit reports ``begun`` once
the nonce and the secret are read, then the grader's own setup runs (its modules imported, the
target and a scene's parts loaded and checked; a ``dependency`` or ``reference`` fault when that
fails), then ``started`` before the submitted file is opened, and the final record
(taskgym.core.verdicts: a grade that ends between the two phases has no verdict).

Reward: a gate of hard checks (the file parses, is a valid solid, as ``meshlib`` builds it:
always for ``iou`` and ``scene``, where ``solid`` asks for ``hausdorff``; body count, face
budget, scene relations) times a continuous score: volume IoU of that solid with the target's
(``iou``), the parts' IoUs in a scene (``scene``), or the Hausdorff bound (``hausdorff``: 1
within it, else bound / distance). An ``iou`` grade succeeds only with the target's topology
and an IoU at the task's threshold (:func:`judge`). No message names a hidden number: not the
target's volume, nor a threshold derived from it.
"""

from __future__ import annotations

import time

LAUNCHED = time.monotonic()

import itertools  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, "/.taskgym-view")  # the grading kit's folder (-I leaves it out)
import gradekit  # noqa: E402  # type: ignore[import-not-found]

sys.path[0] = os.path.dirname(os.path.abspath(__file__))

manifold3d: Any = None  # imported by import_modules(), after the "begun" record
meshlib: Any = None
np: Any = None

TIMES: dict[str, float] = {}
"""When the grader's modules were imported (``imported``), for the report's ``timing``."""
MEMORY_MB = 3072
TOL_MM = 0.01


class Fail(Exception):
    """A gate check failed; the message says which and why."""


def grade(path: str, settings: dict[str, Any], files: dict[str, bytes],
          loaded: dict[str, Any]) -> dict[str, Any]:
    """The record of the submission at ``path``; ``loaded`` is what :func:`references` gave."""
    raw = meshlib.load(path)
    props, solid = meshlib.analyse(raw)
    record: dict[str, Any] = {"properties": props}
    try:
        if not props["finite"]:
            raise Fail("some vertices are NaN or infinite")
        problem = meshlib.solid_problem(props)
        kind = settings["score"]
        if problem and (settings["solid"] or kind != "hausdorff"):
            raise Fail(f"not a valid volume: {problem}")
        max_faces = settings.get("max_faces")
        if max_faces is not None and props["faces"] > max_faces:
            raise Fail(f"{props['faces']} faces, over the budget of {max_faces}")
        bodies = settings.get("bodies")
        if bodies is not None and props.get("bodies") != bodies:
            raise Fail(f"{props.get('bodies')} bodies where {bodies} {'is' if bodies == 1 else 'are'} asked")
        mesh = meshlib.cleaned(raw)
        if kind == "scene":
            record.update(scene(mesh, settings, loaded["parts"]))
        else:
            cleaned_target, target_props, target = loaded["target"]
            distances = meshlib.surface_distances(mesh, cleaned_target,
                                                  5000 if kind == "iou" else 20000)
            record["measured"] = distances
            if kind == "iou":
                assert solid is not None, "the gate let through a mesh that is no solid"
                found = meshlib.iou(solid, target)["iou"]
                record["measured"]["iou"] = found
                if settings.get("unlike_input"):
                    unchanged(solid, found, settings["unlike_input"], files)
                record.update(judge(found, props, target_props, target, settings))
            else:
                bound, far = settings["hausdorff_mm"], distances["hausdorff_mm"]
                record["score"] = 1.0 if far <= bound else bound / far
                record["success"] = far <= bound
                record["reason"] = f"Hausdorff distance {far:.4f} mm over {bound} mm"
    except (Fail, meshlib.MeshError) as exc:
        return {**record, "gate": False, "reason": str(exc)}
    return {**record, "gate": True}


class ReferenceProblem(Exception):
    """The task's hidden target is not what grading needs: the task is broken, not the mesh."""


def reference(files: dict[str, bytes], kind: str) -> tuple[Any, dict[str, Any], Any]:
    """The target as loaded, its properties and its solid; :class:`ReferenceProblem` when it is
    missing, unreadable or (for an IoU) not a valid solid."""
    name = next((n for n in files if n.startswith("target.")), None)
    try:
        if name is None:
            raise ReferenceProblem("the task has no tests/target.<ext>")
        raw = meshlib.load(name, files[name])
        props, solid = meshlib.analyse(raw)
    except meshlib.MeshError as exc:
        raise ReferenceProblem(f"the task's tests/{name} is not readable ({exc})") from exc
    if kind == "iou" and solid is None:
        raise ReferenceProblem(f"the task's tests/{name} is not a valid solid "
                               f"({meshlib.solid_problem(props)}); fix the task")
    return raw, props, solid


TOPOLOGY = ("bodies", "cavities", "genus")


def judge(found: float, props: dict[str, Any], target_props: dict[str, Any], target: Any,
          settings: dict[str, Any]) -> dict[str, Any]:
    """Score the IoU; succeed only with the target's topology (bodies, cavities, through-holes)
    and an IoU at the task's threshold: the highest of the task's own, the bound its smallest
    feature sets (halfway to losing that feature: ``min_feature_mm3``) and halfway from what a
    featureless stand-in (the target's bounding box, its convex hull) scores to 1. The reasons
    name no hidden number."""
    result: dict[str, Any] = {"score": found}
    if any(props[k] != target_props[k] for k in TOPOLOGY):
        return {**result, "success": False, "reason": (
            f"the part's topology is not the task's ({props['bodies']} bodies, {props['cavities']} "
            f"cavities, genus {props['genus']}, the number of through-holes): a feature is missing "
            "or extra")}
    volume = target.volume()
    threshold = float(settings["iou_threshold"])
    if settings.get("min_feature_mm3"):
        feature = float(settings["min_feature_mm3"])
        threshold = max(threshold, 1 - feature / (2 * (volume + feature)))
    for stand_in in featureless(target):
        scored = volume / stand_in.volume()  # each holds the target: its IoU, with no boolean
        if scored < 1 - 1e-3:  # a stand-in that is the target itself (a box, a convex part) is no floor
            threshold = max(threshold, 1 - (1 - scored) / 2)
    return {**result, "success": found >= threshold, "reason": (
        f"IoU {found:.4f} is below this task's success threshold (set by its smallest feature, and "
        "above what a featureless block or the convex hull of the part scores)")}


def featureless(target: Any) -> list[Any]:
    """The featureless stand-ins for the target, each holding it whole: its bounding box and
    its convex hull."""
    box = np.array(target.bounding_box())
    low, high = box[:3], box[3:]
    return [manifold3d.Manifold.cube(high - low).translate(low), target.hull()]


def unchanged(solid: Any, iou: float, name: str, files: dict[str, bytes]) -> None:
    """Fail a submission that is no nearer the target than the task's input is (when the
    input is a valid solid at all: a broken one fails the volume gate itself)."""
    try:
        given = meshlib.analyse(meshlib.load(name, files[name]))[1]
    except meshlib.MeshError:
        return
    if given is None:
        return
    like_input = meshlib.iou(solid, given)["iou"]
    if like_input >= iou:
        raise Fail(f"the mesh is no nearer the target than the unchanged input is (IoU with the "
                   f"input {like_input:.4f}, with the target {iou:.4f})")


def scene(mesh: Any, settings: dict[str, Any], parts: list[Any]) -> dict[str, Any]:
    """Match each body to a part (``parts``: the scene's, cleaned, in ``settings``' order) by
    IoU (after moving it onto the part), then check the layout: no overlaps, resting on the
    floor (or on the part it stands on), relations."""
    from scipy.optimize import linear_sum_assignment

    names = list(settings["parts"])
    bodies = mesh.split(only_watertight=False)
    if len(bodies) != len(parts):
        raise Fail(f"{len(bodies)} bodies where the scene has {len(parts)} parts")
    solids = [meshlib.to_manifold(b) for b in bodies]
    ious = np.zeros((len(bodies), len(parts)))
    for (i, body), (j, part) in itertools.product(enumerate(bodies), enumerate(parts)):
        moved = part.copy()
        moved.apply_translation(body.center_mass - part.center_mass)
        ious[i, j] = meshlib.iou(solids[i], meshlib.to_manifold(moved))["iou"]
    rows, cols = linear_sum_assignment(-ious)
    placed = {names[j]: bodies[i] for i, j in zip(rows, cols, strict=True)}
    matched = {names[j]: float(ious[i, j]) for i, j in zip(rows, cols, strict=True)}
    for a, b in itertools.combinations(range(len(solids)), 2):
        overlap = (solids[a] ^ solids[b]).volume()
        if overlap > 1e-6 * min(solids[a].volume(), solids[b].volume()):
            raise Fail(f"two parts overlap by {overlap:.4f} mm^3")
    supported = {rel[1] for rel in settings["relations"] if rel[0] == "on"}
    for name, body in placed.items():
        low = body.bounds[0][2]
        if name not in supported and abs(low - settings["floor_z"]) > TOL_MM:
            raise Fail(f"{name} does not rest on the floor z = {settings['floor_z']} (lowest z {low:.4f})")
    for rel in settings["relations"]:
        check_relation(rel, placed)
    score = min(matched.values())
    return {"measured": {"part_iou": matched}, "score": score, "success": score >= settings["iou_threshold"],
            "reason": f"a part's IoU with its given shape is {score:.4f} < {settings['iou_threshold']}"}


def check_relation(rel: list[Any], placed: dict[str, Any]) -> None:
    kind, a, b = rel[:3]
    (alo, ahi), (blo, bhi) = placed[a].bounds, placed[b].bounds
    if kind == "left_of":
        ok = ahi[0] <= blo[0] + TOL_MM
    elif kind == "behind":
        ok = alo[1] >= bhi[1] - TOL_MM
    elif kind == "on":
        centre = placed[a].center_mass
        ok = abs(alo[2] - bhi[2]) <= TOL_MM and all(blo[k] <= centre[k] <= bhi[k] for k in (0, 1))
    elif kind == "gap_x":
        ok = abs((blo[0] - ahi[0]) - float(rel[3])) <= 0.05
    else:
        raise Fail(f"unknown relation {kind!r}")
    if not ok:
        raise Fail(f"relation {' '.join(map(str, rel))} does not hold")


def references(settings: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
    """The task's meshes, loaded and checked before anything of the agent's is read: a scene's
    parts (``parts``, cleaned) or the target (``target``: cleaned, its properties, its solid);
    :class:`ReferenceProblem` when one is missing, unreadable or not what grading needs."""
    if settings["score"] != "scene":
        raw, props, solid = reference(files, settings["score"])
        return {"target": (meshlib.cleaned(raw), props, solid)}
    parts = []
    for part in settings["parts"].values():
        try:
            parts.append(meshlib.cleaned(meshlib.load(part, files[part])))
        except (KeyError, meshlib.MeshError) as exc:
            raise ReferenceProblem(f"the task's scene part tests/{part} is missing or not "
                                   f"readable ({exc}); fix the task") from exc
    return {"parts": parts}


def import_modules() -> None:
    """Import what grading needs (trimesh with ``meshlib``) into this module's globals."""
    global manifold3d, meshlib, np
    import manifold3d
    import meshlib  # trimesh with it
    import numpy as np
    import scipy.optimize
    import scipy.sparse.csgraph
    import scipy.spatial  # noqa: F401
    from manifold3d import Manifold  # noqa: F401  (a package's folder left empty imports as
    from numpy import ndarray  # noqa: F401  a namespace: these names are then missing)
    from trimesh import Trimesh  # noqa: F401


def setup(channel: Any, settings: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any] | None:
    """The grader's own setup (:func:`import_modules`, :func:`references` loaded); ``None``,
    with a ``dependency`` or ``reference`` record sent, when it fails: the environment's fault."""
    try:
        import_modules()
        TIMES["imported"] = time.monotonic()
    except ImportError as exc:
        channel.fault("dependency", f"the grading sandbox's Python cannot import "
                      f"{exc.name or 'a module'} ({exc}): install it for the Python graders run "
                      "with (`taskgym doctor` checks it)")
        return None
    try:
        return references(settings, files)
    except ReferenceProblem as exc:
        channel.fault("reference", str(exc))
        return None


def graded(settings: dict[str, Any], files: dict[str, bytes],
           loaded: dict[str, Any]) -> dict[str, Any]:
    """The record of the workspace's one file (the submission); an unexpected error goes to the
    kit, which names its type and place, never its message (which may quote a hidden value,
    such as the target's volume)."""
    try:
        (name,) = os.listdir()
        return grade(name, settings, files, loaded)
    except meshlib.MeshError as exc:
        return {"gate": False, "reason": str(exc)}
    except MemoryError:
        return {"gate": False, "reason": "the mesh needs more memory than grading allows"}


def main(channel: Any) -> None:
    with open("/proc/self/statm") as statm:
        limit = int(statm.read().split()[0]) * resource.getpagesize() + (MEMORY_MB << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    settings, files = channel.secret.settings, channel.secret.files
    loaded = setup(channel, settings, files)
    if loaded is None:
        return
    channel.started()  # from here on the submitted file is read: its failures are graded
    record = graded(settings, files, loaded)
    imported = TIMES["imported"]
    record["timing"] = {"import_sec": imported - LAUNCHED, "grade_sec": time.monotonic() - imported}
    channel.final(**record)


if __name__ == "__main__":
    gradekit.run(main)
