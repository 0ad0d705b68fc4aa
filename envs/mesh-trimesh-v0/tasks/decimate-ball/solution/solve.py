import manifold3d
import numpy as np
import trimesh

dense = trimesh.load('dense.off', force='mesh')
solid = manifold3d.Manifold(manifold3d.Mesh64(np.ascontiguousarray(dense.vertices, dtype=np.float64),
                                              np.ascontiguousarray(dense.faces, dtype=np.uint64)))
out = solid.simplify(0.054513).to_mesh64()
trimesh.Trimesh(out.vert_properties[:, :3], out.tri_verts).export('decimated.stl')
