import manifold3d
import numpy as np
import trimesh

def box(x0, y0, z0, x1, y1, z1):
    return trimesh.creation.box(bounds=[[x0, y0, z0], [x1, y1, z1]])


def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)
part = trimesh.boolean.difference([box(0, 0, 0, 80, 40, 5), cylinder(20, 20, -1, 6, 8.0), cylinder(60, 20, -1, 6, 4.5)], engine='manifold')
part.export('part.obj')
