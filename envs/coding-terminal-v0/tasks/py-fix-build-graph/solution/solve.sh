#!/bin/bash
set -e
cd /app
/usr/bin/python3 - <<'PY'
def sub(path, old, new):
    s = open(path).read()
    assert old in s, (path, old)
    open(path, "w").write(s.replace(old, new))

sub("forge/graph.py", '''        order = []
        visited = set()

        def visit(name):
            if name in visited:
                return
            visited.add(name)
            for dep in self.targets[name].deps:
                if dep in self.targets:
                    visit(dep)
            order.append(name)

        for root in (sorted(self.targets) if roots is None else roots):
            if root not in self.targets:
                raise KeyError(root)
            visit(root)
        return order
''', '''        order = []
        state = {}  # name -> 1 while on the DFS path, 2 when finished
        targets = self.targets
        for root in (sorted(targets) if roots is None else roots):
            if root not in targets:
                raise KeyError(root)
            if root in state:
                continue
            state[root] = 1
            path = [root]
            stack = [iter(targets[root].deps)]
            while stack:
                for dep in stack[-1]:
                    if dep not in targets:
                        continue
                    mark = state.get(dep)
                    if mark == 2:
                        continue
                    if mark == 1:
                        raise CycleError(path[path.index(dep):] + [dep])
                    state[dep] = 1
                    path.append(dep)
                    stack.append(iter(targets[dep].deps))
                    break
                else:
                    stack.pop()
                    name = path.pop()
                    state[name] = 2
                    order.append(name)
        return order
''')

open("forge/planner.py", "w").write('''def plan(graph, changed):
    """Targets to rebuild after the names in `changed` (sources or targets) changed.

    That is every changed target plus every target that depends on a changed name directly or
    through any chain of targets, in graph.toposort() order.
    """
    reverse = {}
    for target in graph.targets.values():
        for dep in target.deps:
            reverse.setdefault(dep, []).append(target.name)
    changed = set(changed)
    dirty = {name for name in changed if graph.is_target(name)}
    todo = list(changed)
    seen = set(changed)
    while todo:
        name = todo.pop()
        for parent in reverse.get(name, ()):
            dirty.add(parent)
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return [name for name in graph.toposort() if name in dirty]
''')

sub("forge/state.py", "import json\nimport os\n", "import hashlib\nimport json\nimport os\n")
sub("forge/state.py", '''    key = (tuple(commands), tuple(source_contents), tuple(dep_fingerprints))
    return format(hash(key) & 0xFFFFFFFFFFFFFFFF, "016x")
''', '''    h = hashlib.sha256()
    for tag, items in ((b"C", [c.encode("utf-8") for c in commands]),
                       (b"S", [bytes(s) for s in source_contents]),
                       (b"D", [d.encode("ascii") for d in dep_fingerprints])):
        h.update(tag + str(len(items)).encode() + b":")
        for item in items:
            h.update(str(len(item)).encode() + b":" + item)
    return h.hexdigest()
''')
PY
