import manifold3d
import numpy as np
import trimesh

parts = {name: trimesh.load(f'{name}.stl', force='mesh') for name in ['block1', 'block2', 'post']}


def put(name, x0, y0, z0):
    """Move a part so its bounding box's minimum corner is at (x0, y0, z0)."""
    parts[name].apply_translation(np.array([x0, y0, z0]) - parts[name].bounds[0])


put('block1', 0.0, 0, 0)
put('block2', 25.0, 0, 0)
put('post', 5.0, 3.0, 10.0)
trimesh.util.concatenate(list(parts.values())).export('scene.glb')
