import manifold3d
import numpy as np
import trimesh

def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)

part = trimesh.load('plate_holes.STL', force='mesh')
part = trimesh.boolean.union([part, cylinder(101.6, 152.4, 12.2, 25.4, 30.48)], engine='manifold')
part.export('edited.glb')
