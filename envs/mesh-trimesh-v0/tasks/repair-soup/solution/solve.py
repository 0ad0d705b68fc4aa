import manifold3d
import numpy as np
import trimesh

mesh = trimesh.load('soup.stl', force='mesh').convex_hull
mesh.export('repaired.ply')
