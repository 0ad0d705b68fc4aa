from dataclasses import dataclass

from .errors import CycleError


@dataclass(frozen=True)
class Target:
    name: str
    deps: tuple
    commands: tuple


class Graph:
    """Targets and their dependencies. A dependency that is not a declared target is a source file."""

    def __init__(self):
        self.targets = {}

    def add(self, name, deps=(), commands=()):
        if name in self.targets:
            raise ValueError(f"duplicate target {name!r}")
        self.targets[name] = Target(name, tuple(deps), tuple(commands))

    def is_target(self, name):
        return name in self.targets

    def dependents(self, name):
        """Targets that list `name` directly among their deps, sorted by name."""
        return sorted(t.name for t in self.targets.values() if name in t.deps)

    def toposort(self, roots=None):
        """Declared targets reachable from `roots`, every target after all of its dependencies.

        Depth-first post-order: roots are visited in the given order (default: all targets
        sorted by name), dependencies in declaration order; each target appears once.
        Raises KeyError for an unknown root and CycleError when the traversal meets a target
        that is still being visited.
        """
        order = []
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
