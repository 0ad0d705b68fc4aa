import manifold3d
import numpy as np
import trimesh

solid = trimesh.load('cylinder.stl', force='mesh')
shell = trimesh.boolean.difference([solid, trimesh.creation.cylinder(radius=13.5, segment=[[0, 0, 1.5], [0, 0, 34.5]], sections=96), trimesh.creation.cylinder(radius=1.5, segment=[[0, 0, -1], [0, 0, 2.5]], sections=96)], engine='manifold')
shell.export('shell.ply')
