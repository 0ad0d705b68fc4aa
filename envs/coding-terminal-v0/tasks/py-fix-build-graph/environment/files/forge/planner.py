def plan(graph, changed):
    """Targets to rebuild after the names in `changed` (sources or targets) changed.

    That is every changed target plus every target that depends on a changed name directly or
    through any chain of targets, in graph.toposort() order.
    """
    changed = set(changed)
    dirty = {name for name in changed if graph.is_target(name)}
    for name in changed:
        dirty.update(graph.dependents(name))
    return [name for name in graph.toposort() if name in dirty]
