import os
import subprocess

from .errors import ForgeError
from .state import fingerprint, load_state, save_state

STATE_FILE = ".forge-state.json"


def _shell(cmd, cwd):
    return subprocess.run(["/bin/bash", "-c", cmd], cwd=cwd).returncode


class Builder:
    def __init__(self, graph, root, runner=None):
        self.graph = graph
        self.root = root
        self.runner = runner or _shell
        self.state_path = os.path.join(root, STATE_FILE)

    def build(self, goal):
        """Bring `goal` up to date; return the names of the targets whose commands ran, in order."""
        state = load_state(self.state_path)
        fps = {}
        ran = []
        for name in self.graph.toposort([goal]):
            target = self.graph.targets[name]
            sources, dep_fps = [], []
            for dep in target.deps:
                if self.graph.is_target(dep):
                    dep_fps.append(fps[dep])
                else:
                    path = os.path.join(self.root, dep)
                    if not os.path.isfile(path):
                        raise ForgeError(f"missing source: {dep}")
                    with open(path, "rb") as fh:
                        sources.append(fh.read())
            fp = fingerprint(target.commands, sources, dep_fps)
            fps[name] = fp
            if state.get(name) == fp:
                continue
            for cmd in target.commands:
                if self.runner(cmd, self.root) != 0:
                    raise ForgeError(f"command failed in {name}")
            ran.append(name)
            state[name] = fp
            save_state(self.state_path, state)
        return ran
