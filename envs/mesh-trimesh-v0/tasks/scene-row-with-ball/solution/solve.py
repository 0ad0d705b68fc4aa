import manifold3d
import numpy as np
import trimesh

parts = {name: trimesh.load(f'{name}.stl', force='mesh') for name in ['block1', 'block2', 'block3', 'post', 'ball']}


def put(name, x0, y0, z0):
    """Move a part so its bounding box's minimum corner is at (x0, y0, z0)."""
    parts[name].apply_translation(np.array([x0, y0, z0]) - parts[name].bounds[0])


put('block1', 0.0, 0, 0)
put('block2', 16.0, 0, 0)
put('block3', 36.0, 0, 0)
put('post', 0, 13.200000000000001, 0)
put('ball', 50.0, 0, 0)
trimesh.util.concatenate(list(parts.values())).export('scene.glb')
