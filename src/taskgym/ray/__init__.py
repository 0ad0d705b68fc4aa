"""taskgym episodes on a Ray cluster: :class:`EnvPool` (needs the ``ray`` extra on every node).

```python
import ray
from taskgym.ray import EnvPool

ray.init(address="auto")                       # or a local Ray
with EnvPool("coding-terminal-v0", actors=4, sessions_per_actor=8, num_cpus=1) as pool:
    env = pool.env()                           # the local env's API, its sandbox on a node
    obs, info = await env.areset(seed=0)
    obs, reward, terminated, truncated, info = await env.astep(
        {"tool": "bash", "args": {"command": "ls"}})
    await env.aclose()
```

:mod:`taskgym.ray.pool` has the pool (placement, back-pressure, closing),
:mod:`taskgym.ray.episode` the env of one episode stream (and what an actor's death does to its
episode), :mod:`taskgym.ray.host` the actor. docs/trainers.md ("Ray") and docs/ray.md (a
multi-node run) say how to use them.
"""

from taskgym.ray.episode import PooledEnv
from taskgym.ray.host import PoolCapacityError, PoolError
from taskgym.ray.pool import EnvPool

__all__ = ["EnvPool", "PoolCapacityError", "PoolError", "PooledEnv"]
