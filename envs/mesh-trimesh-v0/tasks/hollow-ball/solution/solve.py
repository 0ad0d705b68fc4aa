import manifold3d
import numpy as np
import trimesh

solid = trimesh.load('ballA.off', force='mesh')
shell = trimesh.boolean.difference([solid, solid.copy().apply_transform(trimesh.transformations.scale_matrix(0.8556, [-3.9991, 0.0013, -0.0006])), trimesh.creation.cylinder(radius=1.0, segment=[[-3.9991, 0.0013, -7.9278], [-3.9991, 0.0013, -0.0006]], sections=96)], engine='manifold')
shell.export('shell.stl')
