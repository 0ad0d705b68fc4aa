"""Draw a scene's nodes (the tree op's JSON) top-down (X-Z) and from the side (X-Y) as one PNG.

Shapes from collision shapes and meshes, lights as stars with their range; no GPU needed.
Usage: python3 render.py tree.json out.png
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Circle, Rectangle  # noqa: E402


def half_size(node: dict) -> tuple[float, float, float] | None:
    shape = node.get("shape") or {}
    if "extents" in shape:
        return tuple(shape["extents"])  # type: ignore[return-value]
    if "radius" in shape:
        r = shape["radius"]
        return (r, r + shape.get("height", 0) / 2, r)
    if "mesh_size" in node:
        return tuple(v / 2 for v in node["mesh_size"])  # type: ignore[return-value]
    if "mesh_radius" in node:
        r = node["mesh_radius"]
        return (r, node.get("mesh_height", 2 * r) / 2, r)
    return None


def main(src: str, dest: str) -> None:
    nodes = json.load(open(src))["nodes"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.5))
    views = ((0, 2, "top (X right, Z down)"), (0, 1, "side (X right, Y up)"))
    for ax, (a, b, title) in zip(axes, views, strict=True):
        ax.set_title(title)
        ax.set_aspect("equal")
        ax.grid(alpha=0.3)
        for node in nodes:
            t = node.get("transform")
            if t is None:
                continue
            p = t["global_origin"]
            half = half_size(node)
            if half is not None:
                kind = "Sphere" in (node.get("shape") or {}).get("type", node.get("mesh", ""))
                patch = (
                    Circle((p[a], p[b]), half[a], alpha=0.35)
                    if kind
                    else Rectangle((p[a] - half[a], p[b] - half[b]), 2 * half[a], 2 * half[b], alpha=0.35)
                )
                ax.add_patch(patch)
            if "light" in node:
                ax.plot(
                    p[a], p[b], "*", color="#" + node["light"]["color"], markersize=14, markeredgecolor="k"
                )
                if "range" in node["light"]:
                    ax.add_patch(
                        Circle((p[a], p[b]), node["light"]["range"], fill=False, ls=":", color="orange")
                    )
            elif half is None:
                ax.plot(p[a], p[b], "k.", markersize=4)
            if half is None or "Shape" not in node["path"]:
                ax.annotate(node["path"].split("/")[-1], (p[a], p[b]), fontsize=7)
        ax.autoscale_view()
        if b == 2:
            ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(dest, dpi=80)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
