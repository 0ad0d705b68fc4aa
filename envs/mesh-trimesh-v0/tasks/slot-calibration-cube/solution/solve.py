import manifold3d
import numpy as np
import trimesh

def cylinder(x, y, z0, z1, d):
    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], sections=96)

part = trimesh.load('20mm-xyz-cube.stl', force='mesh')
cut = trimesh.creation.box(bounds=[[-48.9519, 3.0919999999999996, -15.9815], [-26.9519, 7.092, -9.9815]])
part = trimesh.boolean.difference([part, cut], engine='manifold')
part.export('edited.obj')
