import manifold3d
import numpy as np
import trimesh

parts = trimesh.load('not_convex.obj', force='mesh').split(only_watertight=True)
mesh = trimesh.boolean.union(list(parts), engine='manifold')
mesh.export('repaired.ply')
