"""Shaded PNG views of a part: a small z-buffer rasteriser (numpy) framed by matplotlib (Agg).

Needs no GPU and no display. Faces are flat-shaded, hidden surfaces removed per pixel, and
the part's visible edges drawn dark. Orthographic views carry millimetre axes in the plane
they show, so dimensions can be read off the picture.
"""

from __future__ import annotations

import io

import cadquery as cq
import matplotlib
import numpy as np
from OCP.BRepAdaptor import BRepAdaptor_Curve

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# view: (direction the camera looks along, screen-right axis, axis labels)
VIEWS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float], tuple[str, str]]] = {
    "iso": ((-1.0, 1.0, -1.0), (1.0, 1.0, 0.0), ("", "")),
    "front": ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), ("X (mm)", "Z (mm)")),
    "top": ((0.0, 0.0, -1.0), (1.0, 0.0, 0.0), ("X (mm)", "Y (mm)")),
    "right": ((-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), ("Y (mm)", "Z (mm)")),
}
"""front looks along +Y (from -Y), top looks down -Z, right looks along -X (from +X)."""

_PIXELS = 560


def _camera(view: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    look, right, _ = VIEWS[view]
    d = np.array(look) / np.linalg.norm(look)
    r = np.array(right) - d * (np.array(right) @ d)
    r /= np.linalg.norm(r)
    return d, r, np.cross(r, d)


def rasterise(shape: cq.Shape, view: str) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """An RGB image of ``shape`` seen from ``view`` and its extent (left, right, bottom, top) in mm."""
    d, r, u = _camera(view)
    vertices, triangles = shape.tessellate(0.02, 0.2)
    points = np.array([v.toTuple() for v in vertices])
    tri = np.array(triangles)
    sx, sy, depth = points @ r, points @ u, points @ d
    low = np.array([sx.min(), sy.min()])
    span = float(max(sx.max() - sx.min(), sy.max() - sy.min(), 1e-6)) * 1.08
    origin = (low + np.array([sx.max(), sy.max()])) / 2 - span / 2
    scale = _PIXELS / span
    px, py = (sx - origin[0]) * scale, (sy - origin[1]) * scale
    zbuf = np.full((_PIXELS, _PIXELS), np.inf)
    image = np.ones((_PIXELS, _PIXELS, 3))
    normals = np.cross(points[tri[:, 1]] - points[tri[:, 0]], points[tri[:, 2]] - points[tri[:, 0]])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    light = -d + 0.5 * u - 0.3 * r
    light /= np.linalg.norm(light)
    shades = 0.25 + 0.75 * np.abs(normals @ light)
    base = np.array([0.45, 0.62, 0.85])
    for (a, b, c), shade in zip(tri, shades, strict=True):
        x0, x1 = int(max(min(px[a], px[b], px[c]), 0)), int(min(max(px[a], px[b], px[c]) + 1, _PIXELS))
        y0, y1 = int(max(min(py[a], py[b], py[c]), 0)), int(min(max(py[a], py[b], py[c]) + 1, _PIXELS))
        area = (px[b] - px[a]) * (py[c] - py[a]) - (px[c] - px[a]) * (py[b] - py[a])
        if x0 >= x1 or y0 >= y1 or abs(area) < 1e-12:
            continue
        gx, gy = np.meshgrid(np.arange(x0, x1) + 0.5, np.arange(y0, y1) + 0.5)
        wa = ((px[b] - gx) * (py[c] - gy) - (px[c] - gx) * (py[b] - gy)) / area
        wb = ((px[c] - gx) * (py[a] - gy) - (px[a] - gx) * (py[c] - gy)) / area
        wc = 1.0 - wa - wb
        inside = (wa >= -1e-9) & (wb >= -1e-9) & (wc >= -1e-9)
        z = wa * depth[a] + wb * depth[b] + wc * depth[c]
        window = zbuf[y0:y1, x0:x1]
        nearer = inside & (z < window)
        window[nearer] = z[nearer]
        image[y0:y1, x0:x1][nearer] = base * shade
    tolerance = span * 0.004
    for edge in shape.Edges():
        length_px = edge.Length() * scale
        curve = BRepAdaptor_Curve(edge.wrapped)
        ts = np.linspace(curve.FirstParameter(), curve.LastParameter(),
                         int(min(max(length_px * 1.5, 2), 4000)))
        samples = np.array([curve.Value(t).Coord() for t in ts])
        ex = ((samples @ r - origin[0]) * scale).astype(int)
        ey = ((samples @ u - origin[1]) * scale).astype(int)
        ok = (ex >= 0) & (ex < _PIXELS) & (ey >= 0) & (ey < _PIXELS)
        ex, ey, ez = ex[ok], ey[ok], (samples @ d)[ok]
        visible = ez <= zbuf[ey, ex] + tolerance
        image[ey[visible], ex[visible]] = 0.1
    extent = (origin[0], origin[0] + span, origin[1], origin[1] + span)
    return image[::-1], extent


def render_png(shape: cq.Shape, view: str, title: str = "") -> bytes:
    """One orthographic view of ``shape`` as PNG bytes."""
    image, extent = rasterise(shape, view)
    xlabel, ylabel = VIEWS[view][2]
    figure, axes = plt.subplots(figsize=(6.4, 6.4), dpi=100)
    axes.imshow(image, extent=extent, interpolation="bilinear")
    if xlabel:
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
    else:
        axes.set_axis_off()
    axes.set_title(title or f"{view} view", fontsize=11)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()
