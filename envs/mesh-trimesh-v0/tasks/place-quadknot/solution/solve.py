import manifold3d
import numpy as np
import trimesh

part = trimesh.load('quadknot.obj', force='mesh')
part.apply_transform(trimesh.transformations.rotation_matrix(np.radians(45), [0, 0, 1]))
low, high = part.bounds
part.apply_translation([-(low[0] + high[0]) / 2, -(low[1] + high[1]) / 2, -low[2]])
part.export('placed.stl')
