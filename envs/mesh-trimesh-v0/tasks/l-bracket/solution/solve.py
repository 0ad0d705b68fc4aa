import manifold3d
import numpy as np
import trimesh

def box(x0, y0, z0, x1, y1, z1):
    return trimesh.creation.box(bounds=[[x0, y0, z0], [x1, y1, z1]])


def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)
solid = trimesh.boolean.union([box(0, 0, 0, 80, 40, 6), box(0, 0, 0, 6, 40, 60)], engine='manifold')
part = trimesh.boolean.difference([solid, cylinder(48.0, 20.0, -1, 7, 6.6)], engine='manifold')
part.export('part.stl')
