import manifold3d
import numpy as np
import trimesh

def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)

part = trimesh.load('plate_holes.STL', force='mesh')
part = trimesh.boolean.difference([part, cylinder(101.6, 121.92, -1.0, 13.7, 12.19), cylinder(101.6, 121.92, 8.466999999999999, 13.7, 24.38)], engine='manifold')
part.export('edited.stl')
