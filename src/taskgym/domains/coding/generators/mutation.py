"""Generator: find and fix one injected bug in a small generated Python package.

A package of 2-4 modules with 4-8 functions/classes is assembled from templates with randomised
names and constants. One bug is injected with an AST mutation (comparison flip, off-by-one,
swapped operands, and/or swap, wrong branch return, min/max swap); a mutation is accepted only if
executing the mutated code changes the outcome of at least two hidden test cases. The agent gets a
bug report with one failing call; the hidden tests cover every unit of the package.
"""

from __future__ import annotations

import ast
import copy
import functools
import pathlib
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from . import _common as c
from . import _mutation_classes as mc
from . import _mutation_templates as mt
from ._mutation_templates import Unit

NAME = "mutation"
DESCRIPTION = "Fix one AST-injected bug in a generated multi-module Python package."

PACKAGES = ["ledgerkit", "tinytools", "opsutil", "shelfware", "corelib", "dailykit", "pyhelpers",
            "workbench"]
STEP_BUDGET = 200_000
TEMPLATES: dict[str, list[Callable[[random.Random], Unit]]] = {
    "text": [mt.slug, mt.caesar, mt.palindrome, mt.duration],
    "numbers": [mt.clamp, mt.tax, mt.month_days, mt.digit_sum, mt.isqrt, mt.percent],
    "sequences": [mt.chunked, mt.window_sums, mt.merge_sorted, mt.longest_run, mt.first_index,
                  mt.top_k],
    "models": [mc.ring_buffer, mc.inventory, mc.rate_limiter, mc.account],
}
MODULE_NAMES: dict[str, list[str]] = {
    "text": ["text", "strings", "textutil"],
    "numbers": ["numeric", "calc", "mathutil"],
    "sequences": ["seqtools", "listops", "sequences"],
    "models": ["models", "stores", "structures"],
}


class _BudgetExceeded(BaseException):
    """Raised by the tracer when mutated code runs for too long (probably an endless loop)."""


def _guarded(call: Callable[[], object]) -> object:
    steps = 0

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal steps
        steps += 1
        if steps > STEP_BUDGET:
            raise _BudgetExceeded
        return tracer

    sys.settrace(tracer)
    try:
        return call()
    finally:
        sys.settrace(None)


def _run_cases(module_src: str, unit: Unit) -> list[object]:
    """Execute ``module_src`` and return the outcome of every case of ``unit``."""
    helpers = c.helper_namespace()
    ns: dict[str, object] = {"__name__": "generated"}
    exec(compile(module_src, "<generated>", "exec"), ns)
    target = ns[unit.name]
    results: list[object] = []
    for case in unit.cases:
        case = copy.deepcopy(case)
        if unit.is_class:
            run = c.get_callable(helpers, "_scenario")
            results.append(_guarded(functools.partial(run, target, case[0], case[1])))
        else:
            run = c.get_callable(helpers, "_outcome")
            results.append(_guarded(functools.partial(run, target, case)))
    return results


# ----------------------------------------------------------------------------- mutation sites

Site = tuple[str, ast.AST, ast.AST]  # (kind, old node, replacement node)
FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
}


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    return None


def _int_node(value: int) -> ast.expr:
    if value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value))
    return ast.Constant(value=value)


def _shift(node: ast.expr, delta: int) -> ast.expr:
    op: ast.operator = ast.Add() if delta > 0 else ast.Sub()
    return ast.BinOp(left=node, op=op, right=ast.Constant(value=1))


def _sites(unit_node: ast.AST) -> list[Site]:
    sites: list[Site] = []
    params: set[str] = set()
    under_unary: set[int] = set()
    for node in ast.walk(unit_node):
        if isinstance(node, ast.arguments):
            params.update(a.arg for a in node.args)
        if isinstance(node, ast.UnaryOp) and _int_value(node) is not None:
            under_unary.add(id(node.operand))
    for node in ast.walk(unit_node):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                flip = FLIPS.get(type(op))
                if flip is not None:
                    ops = list(node.ops)
                    ops[i] = flip()
                    sites.append(("compare", node, ast.Compare(node.left, ops, node.comparators)))
            if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                swapped = ast.Compare(node.comparators[0], node.ops, [node.left])
                sites.append(("swap", node, swapped))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.FloorDiv, ast.Mod,
                                                                  ast.Div)):
            sites.append(("swap", node, ast.BinOp(node.right, node.op, node.left)))
        elif isinstance(node, ast.BoolOp):
            other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            sites.append(("boolop", node, ast.BoolOp(other, node.values)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("min", "max"):
                func = ast.Name("max" if node.func.id == "min" else "min", ast.Load())
                sites.append(("minmax", node, ast.Call(func, node.args, node.keywords)))
            if node.func.id == "range":
                for arg in node.args[:2]:
                    if _int_value(arg) is None:
                        sites += [("range", arg, _shift(arg, d)) for d in (1, -1)]
        elif isinstance(node, ast.Slice):
            for bound in (node.lower, node.upper):
                if bound is not None and _int_value(bound) is None:
                    sites += [("slice", bound, _shift(bound, d)) for d in (1, -1)]
        elif isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Constant) and type(value.value) is bool:
                sites.append(("return", value, ast.Constant(not value.value)))
        value_i = _int_value(node)
        if value_i is not None and id(node) not in under_unary:
            sites += [("constant", node, _int_node(value_i + d)) for d in (1, -1)]
    returns = [n for n in ast.walk(unit_node) if isinstance(n, ast.Return) and n.value is not None]
    for ret in returns:
        for other_ret in returns:
            alt = other_ret.value
            assert ret.value is not None and alt is not None
            is_param = isinstance(alt, ast.Name) and alt.id in params
            simple = isinstance(alt, ast.Constant) or is_param
            if simple and ast.dump(alt) != ast.dump(ret.value):
                sites.append(("return", ret.value, alt))
    return sites


def _replace_in_tree(tree: ast.AST, old: ast.AST, new: ast.AST) -> str:
    """ast.dump of ``tree`` with ``old`` replaced by ``new`` (the tree is left unchanged)."""
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                try:
                    return ast.dump(tree)
                finally:
                    setattr(parent, field, old)
            if isinstance(value, list) and any(v is old for v in value):
                idx = next(i for i, v in enumerate(value) if v is old)
                value[idx] = new
                try:
                    return ast.dump(tree)
                finally:
                    value[idx] = old
    raise ValueError("node not found")


def _splice(source: str, tree: ast.AST, old: ast.AST, new: ast.AST) -> str | None:
    """Replace the source text of ``old`` by ``new``; parenthesise only where needed."""
    assert isinstance(old, (ast.expr, ast.stmt)) and old.end_lineno is not None
    assert old.end_col_offset is not None
    expected = _replace_in_tree(tree, old, new)
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    start = offsets[old.lineno - 1] + old.col_offset
    end = offsets[old.end_lineno - 1] + old.end_col_offset
    text = ast.unparse(new)
    if '"' not in text:  # ast.unparse prefers single quotes; the templates use double quotes
        text = text.replace("'", '"')
    for candidate in (text, f"({text})", ast.unparse(new), f"({ast.unparse(new)})"):
        out = source[:start] + candidate + source[end:]
        try:
            if ast.dump(ast.parse(out)) == expected:
                return out
        except SyntaxError:
            continue
    return None


@dataclass
class Mutant:
    module: str
    unit: Unit
    source: str
    kind: str
    diffs: list[int]  # indexes of the cases whose outcome changed


def _mutate(rng: random.Random, modules: dict[str, list[Unit]], sources: dict[str, str],
            expected: dict[str, list[object]]) -> Mutant:
    targets = [(m, u) for m in sorted(modules) for u in modules[m]]
    rng.shuffle(targets)
    fallback: Mutant | None = None
    for module, unit in targets:
        tree = ast.parse(sources[module])
        unit_node = next(n for n in tree.body if getattr(n, "name", None) == unit.name)
        by_kind: dict[str, list[Site]] = {}
        for site in _sites(unit_node):
            by_kind.setdefault(site[0], []).append(site)
        kinds = sorted(by_kind)
        rng.shuffle(kinds)
        for kind in kinds:
            sites = by_kind[kind]
            rng.shuffle(sites)
            for _, old, new in sites:
                mutated = _splice(sources[module], tree, old, new)
                if mutated is None:
                    continue
                try:
                    got = _run_cases(mutated, unit)
                except (_BudgetExceeded, Exception):
                    continue
                pairs = zip(got, expected[unit.name], strict=True)
                diffs = [i for i, (g, e) in enumerate(pairs) if g != e]
                if len(diffs) >= 2:
                    return Mutant(module, unit, mutated, kind, diffs)
                if diffs and fallback is None:
                    fallback = Mutant(module, unit, mutated, kind, diffs)
    if fallback is None:
        raise RuntimeError("no accepted mutation")
    return fallback


# ----------------------------------------------------------------------------- task assembly

def _render_outcome(outcome: object, should: bool = False) -> str:
    """Human text for a tagged outcome: ('ok', ('int', 3)) -> 'returns `3`'."""
    def plain(tagged: Any) -> Any:
        kind, value = tagged
        if kind == "list":
            return [plain(v) for v in value]
        if kind == "tuple":
            return tuple(plain(v) for v in value)
        if kind == "dict":
            return {plain(k): plain(v) for k, v in value}
        return value

    assert isinstance(outcome, tuple)
    tag, payload = outcome
    verb = "raise" if tag == "raises" else "return"
    verb = verb if should else verb + "s"
    text = payload if tag == "raises" else repr(plain(payload))
    return f"{verb} `{text}`"


def _bug_report(pkg: str, mutant: Mutant, case: tuple[object, ...], got: object,
                want: object) -> str:
    qual = f"{pkg}.{mutant.module}.{mutant.unit.name}"
    if not mutant.unit.is_class:
        call = c.call_repr(qual, case)
        return (f"Calling `{call}` {_render_outcome(got)}, but according to its docstring it "
                f"should {_render_outcome(want, should=True)}.")
    ctor_args, ops = case
    assert isinstance(ctor_args, tuple) and isinstance(ops, list)
    assert isinstance(got, list) and isinstance(want, list)
    ctor = c.call_repr(mutant.unit.name, ctor_args)
    lines = [f"from {pkg}.{mutant.module} import {mutant.unit.name}", f"obj = {ctor}"]
    if got[0] != want[0]:  # the constructor itself misbehaves

        def ctor_text(outcome: Any, should: bool) -> str:
            if outcome[0] == "raises":
                return ("raise" if should else "raises") + f" `{outcome[1]}`"
            return "succeed" if should else "succeeds"

        return (f"Constructing `{qual}{ctor[len(mutant.unit.name):]}` {ctor_text(got[0], False)}"
                f", but according to its docstring it should {ctor_text(want[0], True)}.")
    step = next(i for i, (g, w) in enumerate(zip(got[1:], want[1:], strict=True)) if g != w)
    for i, (name, margs) in enumerate(ops[: step + 1]):
        call = c.call_repr(f"obj.{name}", margs)
        outcome = want[i + 1]
        if i < step and isinstance(outcome, tuple) and outcome[0] == "raises":
            call = f"with suppress({outcome[1]}):  # raising here is expected\n    {call}"
            if "from contextlib import suppress" not in lines:
                lines.insert(0, "from contextlib import suppress")
        lines.append(call)
    return ("This sequence of calls misbehaves:\n\n```python\n" + "\n".join(lines) + "\n```\n\n"
            f"The last call {_render_outcome(got[step + 1])}, but it should "
            f"{_render_outcome(want[step + 1], should=True)}.")


def _test_file(pkg: str, modules: dict[str, list[Unit]], expected: dict[str, list[object]]) -> str:
    out = [f'"""Hidden tests for the {pkg} package."""', "", "import pytest", "",
           f"from {pkg} import {', '.join(sorted(modules))}", "", c.TEST_HELPERS.strip(), ""]
    for module in sorted(modules):
        for unit in modules[module]:
            const = f"CASES_{module.upper()}_{unit.name.upper()}"
            out.append(f"\n{const} = [")
            for case, exp in zip(unit.cases, expected[unit.name], strict=True):
                out.append(f"    ({c.py_literal(case)}, {c.py_literal(exp)}),")
            out.append("]\n")
            out.append(f'@pytest.mark.parametrize("case, expected", {const})')
            out.append(f"def test_{module}_{unit.name.lower()}(case, expected):")
            if unit.is_class:
                out.append(f"    assert _scenario({module}.{unit.name}, *case) == expected")
            else:
                out.append(f"    assert _outcome({module}.{unit.name}, case) == expected")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def generate(seed: int, dest: pathlib.Path) -> None:
    """Write one complete mutation task folder into ``dest``."""
    rng = random.Random(seed)
    pkg = rng.choice(PACKAGES)
    categories = sorted(rng.sample(sorted(TEMPLATES), rng.randint(2, 4)))
    total = rng.randint(max(4, len(categories)), min(8, 3 * len(categories)))
    counts = dict.fromkeys(categories, 1)
    while sum(counts.values()) < total:
        cat = rng.choice(categories)
        if counts[cat] < min(3, len(TEMPLATES[cat])):
            counts[cat] += 1
    modules: dict[str, list[Unit]] = {}
    sources: dict[str, str] = {}
    for cat in categories:
        module = rng.choice(MODULE_NAMES[cat])
        units = [t(rng) for t in rng.sample(TEMPLATES[cat], counts[cat])]
        modules[module] = units
        doc = f'"""{cat.capitalize()} helpers of the {pkg} package."""\n'
        sources[module] = doc + "".join("\n\n" + u.source for u in units)
    expected = {u.name: _run_cases(sources[m], u) for m in sorted(modules) for u in modules[m]}
    mutant = _mutate(rng, modules, sources, expected)
    shown = mutant.diffs[rng.randrange(len(mutant.diffs))]
    got = _run_cases(mutant.source, mutant.unit)[shown]
    want = expected[mutant.unit.name][shown]
    report = _bug_report(pkg, mutant, mutant.unit.cases[shown], got, want)

    start = {f"{pkg}/{m}.py": sources[m] for m in modules}
    start[f"{pkg}/{mutant.module}.py"] = mutant.source
    start[f"{pkg}/__init__.py"] = f'"""{pkg}: small shared helpers."""\n'
    n_units = sum(len(u) for u in modules.values())
    module_list = ", ".join(f"`{m}.py`" for m in sorted(modules))
    instruction = c.dedent(f"""
        # Bug report: wrong result from `{pkg}`

        `/app/{pkg}/` is a small pure-Python helper package used across our services (modules:
        {module_list}; {n_units} public functions/classes in total).
        A colleague filed this:

        """) + report + "\n\n" + c.dedent(f"""
        Find the defect in `/app/{pkg}/` and fix it. The docstrings describe the intended
        behaviour of every function and class; trust them. Requirements:

        - Keep all public names, signatures and modules as they are; standard library only.
        - Fix the root cause: do not special-case the reported input.
        - Hidden tests exercise every function and class of the package, so behaviour that is
          already correct must stay exactly as it is.
        """)
    n_tests = sum(len(u.cases) for units in modules.values() for u in units)
    difficulty = "easy" if n_units <= 5 else "medium"
    toml = c.task_toml(difficulty=difficulty, category="bugfix", tags=["python", "debugging"],
                       expected_tests=n_tests)
    solve = c.solve_script(c.heredoc(f"{pkg}/{mutant.module}.py", sources[mutant.module]))
    tests = {f"test_{pkg}.py": _test_file(pkg, modules, expected)}
    c.write_task(dest, instruction=instruction, toml=toml, start_files=start, solve_sh=solve,
                 tests=tests)
