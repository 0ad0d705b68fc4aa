"""Shaded PNG views of a triangle mesh: a small z-buffer rasteriser (numpy) framed by
matplotlib (Agg). Shared by the domains that draw meshes inside their sandboxes (CAD parts,
trimesh meshes); the host mounts this folder at ``/.taskgym-view``.

Needs no GPU and no display. Faces are flat-shaded, hidden surfaces removed per pixel, and
edges given as polylines drawn dark where visible. Orthographic views carry millimetre axes
in the plane they show, so dimensions can be read off the picture.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# view: (direction the camera looks along, screen-right axis, axis labels)
VIEWS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float], tuple[str, str]]] = {
    "iso": ((-1.0, 1.0, -1.0), (1.0, 1.0, 0.0), ("", "")),
    "front": ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), ("X (mm)", "Z (mm)")),
    "top": ((0.0, 0.0, -1.0), (1.0, 0.0, 0.0), ("X (mm)", "Y (mm)")),
    "right": ((-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), ("Y (mm)", "Z (mm)")),
    "bottom": ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), ("X (mm)", "-Y (mm)")),
}
"""front looks along +Y (from -Y), top looks down -Z, right looks along -X (from +X), bottom
looks up +Z."""

PIXELS = 560


@dataclass
class Frame:
    """A rasterised view: the image, its depth buffer and the camera that made them."""

    image: np.ndarray
    zbuf: np.ndarray
    camera: tuple[np.ndarray, np.ndarray, np.ndarray]
    origin: np.ndarray
    span: float

    @property
    def scale(self) -> float:
        return PIXELS / self.span


def camera(view: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit vectors (looking direction, screen right, screen up) of ``view``."""
    look, right, _ = VIEWS[view]
    d = np.array(look) / np.linalg.norm(look)
    r = np.array(right) - d * (np.array(right) @ d)
    r /= np.linalg.norm(r)
    return d, r, np.cross(r, d)


def rasterise(points: np.ndarray, tri: np.ndarray, view: str) -> Frame:
    """Flat-shaded triangles ``tri`` (indices into ``points``, in mm) seen from ``view``."""
    d, r, u = camera(view)
    sx, sy, depth = points @ r, points @ u, points @ d
    low = np.array([sx.min(), sy.min()])
    span = float(max(sx.max() - sx.min(), sy.max() - sy.min(), 1e-6)) * 1.08
    origin = (low + np.array([sx.max(), sy.max()])) / 2 - span / 2
    scale = PIXELS / span
    px, py = (sx - origin[0]) * scale, (sy - origin[1]) * scale
    zbuf = np.full((PIXELS, PIXELS), np.inf)
    image = np.ones((PIXELS, PIXELS, 3))
    normals = np.cross(points[tri[:, 1]] - points[tri[:, 0]], points[tri[:, 2]] - points[tri[:, 0]])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    light = -d + 0.5 * u - 0.3 * r
    light /= np.linalg.norm(light)
    shades = 0.25 + 0.75 * np.abs(normals @ light)
    base = np.array([0.45, 0.62, 0.85])
    for (a, b, c), shade in zip(tri, shades, strict=True):
        x0, x1 = int(max(min(px[a], px[b], px[c]), 0)), int(min(max(px[a], px[b], px[c]) + 1, PIXELS))
        y0, y1 = int(max(min(py[a], py[b], py[c]), 0)), int(min(max(py[a], py[b], py[c]) + 1, PIXELS))
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
    return Frame(image, zbuf, (d, r, u), origin, span)


def draw_polyline(frame: Frame, samples: np.ndarray) -> None:
    """Darken the visible pixels of ``samples`` (points along an edge, dense enough)."""
    d, r, u = frame.camera
    ex = ((samples @ r - frame.origin[0]) * frame.scale).astype(int)
    ey = ((samples @ u - frame.origin[1]) * frame.scale).astype(int)
    ok = (ex >= 0) & (ex < PIXELS) & (ey >= 0) & (ey < PIXELS)
    ex, ey, ez = ex[ok], ey[ok], (samples @ d)[ok]
    visible = ez <= frame.zbuf[ey, ex] + frame.span * 0.004
    frame.image[ey[visible], ex[visible]] = 0.1


def draw_segments(frame: Frame, starts: np.ndarray, ends: np.ndarray) -> None:
    """Straight edges from ``starts[i]`` to ``ends[i]``, sampled about one per pixel."""
    for a, b in zip(starts, ends, strict=True):
        count = int(np.clip(np.linalg.norm(b - a) * frame.scale * 1.5, 2, 4000))
        draw_polyline(frame, a + np.linspace(0.0, 1.0, count)[:, None] * (b - a))


def to_png(frame: Frame, view: str, title: str) -> bytes:
    """The frame as PNG bytes, with millimetre axes for the orthographic views."""
    extent = (frame.origin[0], frame.origin[0] + frame.span, frame.origin[1],
              frame.origin[1] + frame.span)
    xlabel, ylabel = VIEWS[view][2]
    figure, axes = plt.subplots(figsize=(6.4, 6.4), dpi=100)
    axes.imshow(frame.image[::-1], extent=extent, interpolation="bilinear")
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
