import manifold3d
import numpy as np
import trimesh

block = trimesh.boolean.difference([trimesh.creation.box(bounds=[[0, 0, -10], [10, 10, 0]]), trimesh.creation.box(bounds=[[-1, -1, -6], [11, 5, -4]])], engine='manifold')
pyramid = trimesh.convex.convex_hull([[0, 10, 0], [10, 10, 0], [0, 10, -10], [10, 10, -10], [5, 15, -5]])
mesh = trimesh.boolean.union([block, pyramid], engine='manifold')
mesh.export('repaired.ply')
