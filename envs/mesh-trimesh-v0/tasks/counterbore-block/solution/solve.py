import manifold3d
import numpy as np
import trimesh

def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)

part = trimesh.load('block.stl', force='mesh')
part = trimesh.boolean.difference([part, cylinder(30.0, 20.0, -1.0, 16.0, 6.0), cylinder(30.0, 20.0, 10.0, 16.0, 12.0)], engine='manifold')
part.export('edited.ply')
