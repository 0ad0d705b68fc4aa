import manifold3d
import numpy as np
import trimesh

def box(x0, y0, z0, x1, y1, z1):
    return trimesh.creation.box(bounds=[[x0, y0, z0], [x1, y1, z1]])


def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)
solid = trimesh.boolean.union([box(0, 0, 0, 50, 30, 4), box(0, 0, 0, 4, 30, 40)], engine='manifold')
part = trimesh.boolean.difference([solid, cylinder(30.0, 15.0, -1, 5, 4.5)], engine='manifold')
part.export('part.off')
