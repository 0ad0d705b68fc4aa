import manifold3d
import numpy as np
import trimesh

part = trimesh.load('idler_riser.STL', force='mesh')
part.apply_scale(min(np.array([53.1, 76.8, 10.0]) / part.extents))
part.apply_translation(-part.bounds[0])
part.export('placed.stl')
