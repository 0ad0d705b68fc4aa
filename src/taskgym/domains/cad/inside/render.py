"""Shaded PNG views of a part, drawn by the shared mesh renderer (``meshview``, mounted at
/.taskgym-view): the part's tessellation flat-shaded, its visible B-rep edges drawn dark."""

from __future__ import annotations

import sys

import cadquery as cq
import numpy as np
from OCP.BRepAdaptor import BRepAdaptor_Curve

sys.path.append("/.taskgym-view")
import meshview  # noqa: E402


def render_png(shape: cq.Shape, view: str, title: str = "") -> bytes:
    """One orthographic view of ``shape`` as PNG bytes."""
    vertices, triangles = shape.tessellate(0.02, 0.2)
    frame = meshview.rasterise(np.array([v.toTuple() for v in vertices]), np.array(triangles), view)
    for edge in shape.Edges():
        curve = BRepAdaptor_Curve(edge.wrapped)
        ts = np.linspace(curve.FirstParameter(), curve.LastParameter(),
                         int(min(max(edge.Length() * frame.scale * 1.5, 2), 4000)))
        meshview.draw_polyline(frame, np.array([curve.Value(t).Coord() for t in ts]))
    return meshview.to_png(frame, view, title)
