import manifold3d
import numpy as np
import trimesh

mesh = trimesh.load('wallhole.obj', force='mesh').convex_hull
mesh.export('repaired.ply')
