import manifold3d
import numpy as np
import trimesh

mesh = trimesh.load('multibody.stl', force='mesh')
trimesh.repair.fix_normals(mesh, multibody=True)
mesh.export('repaired.ply')
