"""Host-side lines per domain: what a domain costs beyond the shared machinery.

Counts every line (as ``wc -l`` does: blank lines, comments and docstrings included) of each
``src/taskgym/domains/<domain>/**/*.py`` file, except those under a folder named
``generators/`` (task generators), ``inside/`` or ``grader/`` (scripts that run inside the
sandbox) and ``data/`` (task data). So what is counted is the domain's env, tools, verifier,
settings and whatever other module runs on the host.

A domain's cost also holds the host-side modules of ``core/`` and ``tools/`` (outside
``tools/inside/``) written for it: a module that only domains import, and at most
:data:`MAX_SHARERS` of them, is counted against each of those domains (in full: an author who
copies one of them gets all of it). The importers are read from the ``import`` statements of
every module under ``src/taskgym`` (at any depth in the file, ``TYPE_CHECKING`` blocks too); an
importer that is itself such a module passes on its own importers, and a package that only
re-exports a name (``taskgym.tools``, a kit namespace) passes its use on to the module that
defines it. A module that three or
more domains import, or that anything outside the domains imports (core's env, the CLI, the
evaluation), is shared machinery and counted against none.

Prints a table. With ``--max N`` exits 1 when a domain is over ``N`` lines, except a domain
listed in :data:`OVER_BUDGET` (over the budget when this check began), which fails only when
it grows past its recorded lines; the table says when such a ceiling can come down.

    python3 scripts/domain_lines.py [--max 300]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
LEFT_OUT = frozenset({"generators", "inside", "grader", "data"})
SHARED = ("core", "tools")
"""The folders of ``taskgym`` whose modules may be a domain's own code in disguise."""
MAX_SHARERS = 2
"""A module of :data:`SHARED` that at most this many domains (and nothing else) import is
counted against each of them: CAD and mesh share their worker, and it is the cost of both."""
OVER_BUDGET: dict[str, int] = {
    "cad": 736,
    "coding": 867,
    "finance": 1013,
    "game": 361,
    "mesh": 662,
}
"""Domains over 300 lines when this count began (issue 28, 2026-12-05), each with the lines
it had after the domain kit (coding's own doctor lines moved in from doctor.py) and the grader
kit (its strict result models, the validation the readers lacked, added 12 to 20 lines to each
domain with a grader): such a domain fails ``--max`` only when it grows past them. Lower a
number when its domain shrinks (the table says when); remove the entry once the domain is
within budget."""


def host_files(domain: Path) -> list[Path]:
    """The domain's host-side modules: its .py files outside the folders left out."""
    return sorted(p for p in domain.rglob("*.py")
                  if not LEFT_OUT.intersection(p.relative_to(domain).parts[:-1]))


def count(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass(frozen=True)
class Import:
    """One name an import statement takes: from ``module`` (resolved), ``name`` (``None`` for a
    whole module), bound as ``bound``; ``top`` when the statement is at the module's top level."""

    module: str
    name: str | None
    bound: str
    top: bool


def read_imports(src: Path, path: Path) -> tuple[list[Import], set[str], set[str]]:
    """``path``'s imports of ``taskgym`` (relative ones resolved against its package), the
    names its ``__all__`` lists, and the names its code reads."""
    me = module_name(src, path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_bytes(), filename=str(path))
    top = {id(node) for node in tree.body}
    imports: list[Import] = []
    exported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports += [Import(a.name, None, a.asname or a.name.partition(".")[0], id(node) in top)
                        for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            imports += [Import(base, a.name, a.asname or a.name, id(node) in top)
                        for a in node.names]
        elif (isinstance(node, ast.Assign) and id(node) in top
              and any(isinstance(x, ast.Name) and x.id == "__all__" for x in node.targets)
              and isinstance(node.value, ast.List | ast.Tuple)):
            exported |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return [i for i in imports if i.module.split(".")[0] == "taskgym"], exported, read


def import_graph(src: Path, files: dict[str, Path]) -> dict[str, set[str]]:
    """Per module, the modules that import it. A package's ``__init__`` that re-exports a name
    (imports it at its top level, lists it in ``__all__`` and does not use it itself) is no
    user of it: whoever takes the name through the package uses the module that defines it,
    so a kit namespace hides nobody's code."""
    read = {name: read_imports(src, path) for name, path in files.items()}
    reexports: dict[str, dict[str, tuple[str, str | None]]] = {}
    for name, path in files.items():
        imports, exported, used = read[name]
        if path.name == "__init__.py":
            reexports[name] = {i.bound: (i.module, i.name) for i in imports
                               if i.top and i.bound in exported and i.bound not in used}

    def resolve(module: str, name: str | None, depth: int = 0) -> str:
        if name is None or f"{module}.{name}" in files:
            return module if name is None else f"{module}.{name}"
        source = reexports.get(module, {}).get(name)
        if source is not None and depth < 20:
            return resolve(*source, depth + 1)
        return module

    importers: dict[str, set[str]] = {}
    for name, (imports, _, _) in read.items():
        passed_on = reexports.get(name, {})
        for i in imports:
            if passed_on.get(i.bound) == (i.module, i.name):
                continue
            target = resolve(i.module, i.name)
            if target in files and target != name:
                importers.setdefault(target, set()).add(name)
    return importers


def domain_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "domains" else None


def is_candidate(module: str) -> bool:
    parts = module.split(".")
    return len(parts) > 1 and parts[1] in SHARED and "inside" not in parts[2:]


@dataclass
class DomainCount:
    """One domain's host lines: its own files and the modules of core/ and tools/ its alone."""

    own: dict[str, int] = field(default_factory=dict)
    borrowed: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.own.values()) + sum(self.borrowed.values())


def users(importers: dict[str, set[str]], candidates: Iterable[str]) -> dict[str, set[str]]:
    """Per candidate module, the domains that use it, or ``{"shared"}`` among them when anything
    outside the domains does; a candidate importer passes on its own users (to a fixed point)."""
    result: dict[str, set[str]] = {m: set() for m in candidates}
    changed = True
    while changed:
        changed = False
        for module, found in result.items():
            for importer in importers.get(module, ()):
                if importer in result:
                    new = result[importer]
                elif (domain := domain_of(importer)) is not None:
                    new = {domain}
                else:
                    new = {"shared"}
                if not new <= found:
                    found |= new
                    changed = True
    return result


def domain_lines(src: Path = SRC) -> dict[str, DomainCount]:
    """Every domain's count under ``src`` (the folder holding the ``taskgym`` package)."""
    files = {module_name(src, p): p for p in sorted((src / "taskgym").rglob("*.py"))}
    importers = import_graph(src, files)
    domains = src / "taskgym" / "domains"
    counts = {d.name: DomainCount({p.relative_to(d).as_posix(): count(p) for p in host_files(d)})
              for d in sorted(domains.iterdir()) if (d / "__init__.py").is_file()}
    for module, used_by in users(importers, filter(is_candidate, files)).items():
        if used_by and "shared" not in used_by and len(used_by) <= MAX_SHARERS:
            relative = files[module].relative_to(src / "taskgym").as_posix()
            for domain in used_by & counts.keys():
                counts[domain].borrowed[relative] = count(files[module])
    return counts


def over(counts: dict[str, DomainCount], limit: int,
         ceilings: dict[str, int]) -> list[str]:
    """What fails ``--max limit``: a domain over ``limit`` and over its ceiling, if it has one."""
    return [f"{name} {c.total} (over {limit}" + (
                f", and past its recorded {ceilings[name]})" if name in ceilings else ")")
            for name, c in counts.items()
            if c.total > limit and c.total > ceilings.get(name, limit)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=None,
                        help="fail above this many lines (a domain in OVER_BUDGET: above its own)")
    args = parser.parse_args()
    counts = domain_lines()
    print(f"{'domain':<10} {'lines':>6}  files (own; then core/ and tools/ modules counted here)")
    for name, c in counts.items():
        own = ", ".join(f"{f} {n}" for f, n in c.own.items())
        borrowed = "; " + ", ".join(f"{f} {n}" for f, n in c.borrowed.items()) if c.borrowed else ""
        print(f"{name:<10} {c.total:>6}  {own}{borrowed}")
    if args.max is None:
        return 0
    for name, c in counts.items():
        ceiling = OVER_BUDGET.get(name)
        if ceiling is not None and c.total > args.max:
            print(f"{name} is over {args.max} lines (known overrun, may not grow past {ceiling})")
        if ceiling is not None and c.total < ceiling:
            print(f"{name}: its OVER_BUDGET entry can come down to "
                  f"{c.total if c.total > args.max else 'nothing (remove it)'}")
    failed = over(counts, args.max, OVER_BUDGET)
    if failed:
        print(f"over {args.max} lines: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
