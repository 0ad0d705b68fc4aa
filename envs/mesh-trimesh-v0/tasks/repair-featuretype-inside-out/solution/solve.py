import manifold3d
import numpy as np
import trimesh

mesh = trimesh.load('broken.ply', force='mesh', process=False)
mesh = trimesh.Trimesh(mesh.vertices, mesh.faces, process=False)
mesh.merge_vertices()
mesh.update_faces(mesh.nondegenerate_faces())
mesh.update_faces(mesh.unique_faces())
mesh.remove_unreferenced_vertices()
trimesh.repair.fill_holes(mesh)
trimesh.repair.fix_normals(mesh, multibody=False)
mesh.export('repaired.stl')
