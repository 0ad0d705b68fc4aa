"""Generator: implement a function (or a pair of functions) to an exact specification.

One of eight specifications (run-length coding, Roman numerals, version ordering, word wrap,
interval merging, custom-alphabet base conversion, check digits, spiral order) is drawn and its
parameters (names, alphabets, weights, modes, limits) randomised. The agent gets the exact spec
with examples and a stub module raising NotImplementedError; the hidden tests hold many cases
whose expected outcomes the generator computes by executing the reference implementation.
"""

from __future__ import annotations

import pathlib
import random
from collections.abc import Callable

from . import _common as c
from . import _spec_catalog as sc
from . import _spec_catalog_more as scm
from ._spec_catalog import Spec

NAME = "spec"
DESCRIPTION = "Implement functions to an exact, randomised specification (many hidden cases)."

SPEC_MAKERS: list[Callable[[random.Random], Spec]] = [
    sc.rle, sc.roman, sc.version, sc.wrap,
    scm.intervals, scm.base_convert, scm.checksum, scm.spiral,
]
N_EXAMPLES = 5


def _outcomes(spec: Spec) -> list[object]:
    helpers = c.helper_namespace()
    outcome = c.get_callable(helpers, "_outcome")
    ns: dict[str, object] = {"__name__": spec.module}
    exec(compile(spec.reference, f"<{spec.module}>", "exec"), ns)
    return [outcome(c.get_callable(ns, fn), args) for fn, args in spec.cases]


def _example(fn: str, args: tuple[object, ...], result: object) -> str:
    assert isinstance(result, tuple)
    tag, payload = result
    if tag == "raises":
        return f"{c.call_repr(fn, args)}  # raises {payload}"
    return f"{c.call_repr(fn, args)}  ->  {_plain(payload)!r}"


def _plain(tagged: object) -> object:
    assert isinstance(tagged, tuple)
    kind, value = tagged
    if kind == "list":
        return [_plain(v) for v in value]
    if kind == "tuple":
        return tuple(_plain(v) for v in value)
    return value


def _stub(spec: Spec) -> str:
    parts = [f'"""{spec.title} (see the task description for the specification)."""\n']
    for _, signature in spec.signatures:
        parts.append(f"\n\n{signature}\n    raise NotImplementedError\n")
    return "".join(parts)


def _tests(spec: Spec, results: list[object]) -> str:
    out = [f'"""Hidden tests for {spec.module}.py."""', "", "import pytest", "",
           f"import {spec.module}", "", c.TEST_HELPERS.strip(), ""]
    for fn, _ in spec.signatures:
        rows = [(args, res) for (name, args), res in zip(spec.cases, results, strict=True)
                if name == fn]
        out.append(f"\nCASES_{fn.upper()} = [")
        out += [f"    ({c.py_literal(args)}, {c.py_literal(res)})," for args, res in rows]
        out.append("]\n")
        out.append(f'@pytest.mark.parametrize("args, expected", CASES_{fn.upper()})')
        out.append(f"def test_{fn}(args, expected):")
        out.append(f"    assert _outcome({spec.module}.{fn}, args) == expected")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def generate(seed: int, dest: pathlib.Path) -> None:
    """Write one complete function-to-spec task folder into ``dest``."""
    rng = random.Random(seed)
    spec = rng.choice(SPEC_MAKERS)(rng)
    seen: set[str] = set()
    unique = []
    for case in spec.cases:  # drop repeated inputs (repr of builtins is a faithful key)
        if repr(case) not in seen:
            seen.add(repr(case))
            unique.append(case)
    spec.cases = unique
    if len(unique) < 20:
        raise RuntimeError(f"{NAME}: only {len(unique)} distinct cases (seed {seed})")
    results = _outcomes(spec)
    shown: list[str] = []
    for fn, _ in spec.signatures:  # a few examples per function, errors included when present
        idx = [i for i, (name, _) in enumerate(spec.cases) if name == fn]
        short = sorted(idx, key=lambda i: (len(repr(spec.cases[i][1])), i))
        short = short[: max(N_EXAMPLES, 2 * len(short) // 3)]  # prefer readable examples
        picks = sorted(rng.sample(short, min(len(short), N_EXAMPLES)))
        shown += [_example(fn, spec.cases[i][1], results[i]) for i in picks]
    names = ", ".join(f"`{fn}`" for fn, _ in spec.signatures)
    instruction = c.dedent(f"""
        # {spec.title}

        Please implement {names} in `/app/{spec.module}.py` (currently a stub raising
        `NotImplementedError`). Keep the module name and the signatures; standard library only,
        no I/O. The functions must follow this specification exactly:

        """) + spec.text + "\n" + "Examples:\n\n```python\n" + "\n".join(shown) + "\n```\n\n" + (
        "Hidden tests call the functions with many other inputs, including edge cases and "
        "invalid input; they check exact return values and types (e.g. `tuple` vs `list`, "
        "`int` vs `bool`) and exception types.\n")
    module_file = f"{spec.module}.py"
    reference = f'"""{spec.title}: reference implementation."""\n\n\n' + spec.reference
    toml = c.task_toml(difficulty=spec.difficulty, category="implementation",
                       tags=["python", "algorithms", "spec"], expected_tests=len(spec.cases))
    c.write_task(dest, instruction=instruction, toml=toml,
                 start_files={module_file: _stub(spec)},
                 solve_sh=c.solve_script(c.heredoc(module_file, reference)),
                 tests={f"test_{spec.module}.py": _tests(spec, results)})
