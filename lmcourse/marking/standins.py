"""Stand-ins: the reference versions of earlier exercises that a later exercise's cases run with.

In a graded notebook their code must not exist in the kernel before the records of the exercises
they answer are taken, so the build writes it into the hidden test of the exercise that needs it
(:mod:`.grade_line`): ``tests.grade("count_ngrams")`` becomes ``tests.grade("count_ngrams",
standins="...", hidden="...")``, the reference's functions as text, compiled in the kernel when that
line runs (:func:`load_standins`). The student's release has no hidden tests, so it has none of this text.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from typing import Any

from .spec import Exercise, Notebook

__all__ = ["load_standins", "standin_source"]


def load_standins(source: str, ex: Exercise) -> dict[str, Any]:
    """The stand-ins compiled from the source the build wrote into the hidden test."""
    module = types.ModuleType(f"lmcourse_standins_{ex.name}")
    exec(compile(source, f"<stand-ins for {ex.name}>", "exec"), module.__dict__)  # noqa: S102 (the grader's own text)
    return {n: module.__dict__[n] for n in ex.standins}


def standin_source(notebook: Notebook, name: str) -> str:
    """The source of the stand-ins exercise ``name`` needs: the reference module's imports they use and the
    functions named (with the reference functions they call, transitively). Refuses to include an
    exercise that is not earlier than ``name``: its code must not exist in the kernel yet."""
    ex = notebook.exercise(name)
    module = importlib.import_module(notebook.reference)
    tree = ast.parse(inspect.getsource(module))
    import_nodes = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) and not (
        isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    defs = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    order = [e.name for e in notebook.exercises]
    allowed = set(order[:order.index(name)])
    wanted, todo = [], list(ex.standins)
    while todo:
        fn = todo.pop(0)
        if fn in wanted:
            continue
        if fn in order and fn not in allowed:
            raise ValueError(f"{notebook.name}: the stand-ins of {name} would bring in {fn}, which is graded "
                             "at or after it")
        wanted.append(fn)
        called = {n.id for n in ast.walk(defs[fn]) if isinstance(n, ast.Name)}
        todo += sorted(c for c in called if c in defs and c not in wanted)
    source = inspect.getsource(module)
    body = [ast.get_source_segment(source, defs[fn]) for fn in sorted(wanted, key=lambda f: defs[f].lineno)]
    # only the imports the stand-ins use: the reference module also imports course code that a graded
    # kernel withholds (the given module that does the same work), which must not come in with them
    used = {n.id for fn in wanted for n in ast.walk(defs[fn]) if isinstance(n, ast.Name)}
    imports = [ast.get_source_segment(source, node) for node in import_nodes if _bound(node) & used]
    return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(body) + "\n"


def _bound(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The names an import statement binds."""
    if isinstance(node, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in node.names}
    return {a.asname or a.name for a in node.names}
