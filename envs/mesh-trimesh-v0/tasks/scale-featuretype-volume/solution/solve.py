import manifold3d
import numpy as np
import trimesh

part = trimesh.load('featuretype.STL', force='mesh')
part.apply_translation(-part.center_mass)
part.apply_scale((744.2 / part.volume) ** (1 / 3))
part.export('placed.ply')
