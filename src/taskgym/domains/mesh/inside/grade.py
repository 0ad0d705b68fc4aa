"""Grade a submitted mesh file against the task's hidden target, in a fresh sandbox.

Runs as ``python3 -I -B grade.py`` in a workspace whose one file is the submission (its name
gives its format), with this sandbox's own, unpatched trimesh and
manifold3d: the agent's file is only data here (nothing of the agent's runs), read under
size, face-count and memory bounds. The settings and the target meshes come from a secret
descriptor (they are never files in any sandbox); one JSON record goes back on the report
descriptor, prefixed with the nonce (see taskgym.sandbox.grading).

Reward: a gate of hard checks (the file parses, is a clean closed volume where asked, body
count, face budget, scene relations) times a continuous score: volume IoU from manifold3d
booleans against the target (``iou``), the parts' IoUs in a scene (``scene``), or the
Hausdorff bound (``hausdorff``: 1 within it, else bound / distance).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import base64  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import meshlib  # noqa: E402
import numpy as np  # noqa: E402

MEMORY_MB = 3072
TOL_MM = 0.01


class Fail(Exception):
    """A gate check failed; the message says which and why."""


def _read_fd(name: str) -> bytes:
    fd = int(os.environ[name])
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def grade(path: str, settings: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
    raw = meshlib.load(path)
    props = meshlib.properties(raw)
    record: dict[str, Any] = {"properties": props}
    try:
        if not props["finite"]:
            raise Fail("some vertices are NaN or infinite")
        problem = meshlib.solid_problem(props)
        if settings["solid"] and problem:
            raise Fail(f"not a valid volume: {problem}")
        max_faces = settings.get("max_faces")
        if max_faces is not None and props["faces"] > max_faces:
            raise Fail(f"{props['faces']} faces, over the budget of {max_faces}")
        bodies = settings.get("bodies")
        if bodies is not None and props["bodies"] != bodies:
            raise Fail(f"{props['bodies']} bodies where {bodies} {'is' if bodies == 1 else 'are'} asked")
        mesh = meshlib.cleaned(raw)
        kind = settings["score"]
        if kind == "scene":
            record.update(scene(mesh, settings, files))
        else:
            name = next(n for n in files if n.startswith("target."))
            target = meshlib.cleaned(meshlib.load(name, files[name]))
            distances = meshlib.surface_distances(mesh, target, 5000 if kind == "iou" else 20000)
            record["measured"] = distances
            if kind == "iou":
                solid = meshlib.to_manifold(mesh)
                found = meshlib.iou(solid, meshlib.to_manifold(target))
                record["measured"].update(found)
                if settings.get("unlike_input"):
                    unchanged(solid, found["iou"], settings["unlike_input"], files)
                record["score"] = found["iou"]
                record["success"] = found["iou"] >= settings["iou_threshold"]
                record["reason"] = f"IoU {found['iou']:.4f} < {settings['iou_threshold']}"
            else:
                bound, far = settings["hausdorff_mm"], distances["hausdorff_mm"]
                record["score"] = 1.0 if far <= bound else bound / far
                record["success"] = far <= bound
                record["reason"] = f"Hausdorff distance {far:.4f} mm over {bound} mm"
    except (Fail, meshlib.MeshError) as exc:
        return {**record, "gate": False, "reason": str(exc)}
    return {**record, "gate": True}


def unchanged(solid: Any, iou: float, name: str, files: dict[str, bytes]) -> None:
    """Fail a submission that is no nearer the target than the task's input is (when the
    input is a valid solid at all: a broken one fails the volume gate itself)."""
    try:
        raw = meshlib.load(name, files[name])
        if not meshlib.properties(raw)["finite"] or meshlib.solid_problem(meshlib.properties(raw)):
            return
        given = meshlib.to_manifold(meshlib.cleaned(raw))
    except meshlib.MeshError:
        return
    like_input = meshlib.iou(solid, given)["iou"]
    if like_input >= iou:
        raise Fail(f"the mesh is no nearer the target than the unchanged input is (IoU with the "
                   f"input {like_input:.4f}, with the target {iou:.4f})")


def scene(mesh: Any, settings: dict[str, Any], files: dict[str, bytes]) -> dict[str, Any]:
    """Match each body to a part by IoU (after moving it onto the part), then check the
    layout: no overlaps, resting on the floor (or on the part it stands on), relations."""
    from scipy.optimize import linear_sum_assignment

    names = list(settings["parts"])
    parts = [meshlib.cleaned(meshlib.load(settings["parts"][n], files[settings["parts"][n]]))
             for n in names]
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


def main() -> None:
    with open("/proc/self/statm") as statm:
        limit = int(statm.read().split()[0]) * resource.getpagesize() + (MEMORY_MB << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    nonce = _read_fd("TASKGYM_NONCE_FD").decode()
    secret = json.loads(_read_fd("TASKGYM_SECRET_FD"))
    files = {name: base64.b64decode(data) for name, data in secret["files"].items()}
    imported = time.monotonic()
    try:
        (name,) = os.listdir()  # the submission, the workspace's one file
        record = grade(name, secret["settings"], files)
    except meshlib.MeshError as exc:
        record = {"gate": False, "reason": str(exc)}
    except MemoryError:
        record = {"gate": False, "reason": "the mesh needs more memory than grading allows"}
    except Exception:
        record = {"gate": False, "reason": "the mesh could not be graded:\n"
                                           + traceback.format_exc(limit=-2)[-1500:]}
    record["final"] = True
    record["timing"] = {"import_sec": imported - STARTED, "grade_sec": time.monotonic() - imported}
    with os.fdopen(int(os.environ["TASKGYM_REPORT_FD"]), "w") as report:
        report.write(f"{nonce} {json.dumps(record)}\n")
    os._exit(0)


if __name__ == "__main__":
    main()
