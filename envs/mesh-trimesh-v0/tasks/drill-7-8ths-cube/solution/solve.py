import manifold3d
import numpy as np
import trimesh

def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)

part = trimesh.load('7_8ths_cube.stl', force='mesh')
part = trimesh.boolean.difference([part, cylinder(-10.0, -10.0, -21.0, 21.0, 8.0)], engine='manifold')
part.export('edited.stl')
