import manifold3d
import numpy as np
import trimesh

solid = trimesh.load('box.stl', force='mesh')
shell = trimesh.boolean.difference([solid, trimesh.creation.box(bounds=[[2, 2, 2], [38, 38, 22.0]]), trimesh.creation.cylinder(radius=2.0, segment=[[20.0, 20.0, -1], [20.0, 20.0, 3]], sections=96)], engine='manifold')
shell.export('shell.stl')
