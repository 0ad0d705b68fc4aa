import manifold3d
import numpy as np
import trimesh

solid = trimesh.load('box.stl', force='mesh')
shell = trimesh.boolean.difference([solid, trimesh.creation.box(bounds=[[3, 3, 3], [57, 57, 33.0]]), trimesh.creation.cylinder(radius=2.5, segment=[[30.0, 30.0, -1], [30.0, 30.0, 4]], sections=96)], engine='manifold')
shell.export('shell.obj')
