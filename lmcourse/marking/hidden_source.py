"""Hidden cases that arrive with their own test cell: one exercise's entry of a hidden module, as text.

A graded kernel has no hidden module. The build writes into each exercise's hidden test the part
of ``<topic>_hidden.py`` that exercise needs (:func:`hidden_source`): its ``HIDDEN`` entry and the
module-level definitions that entry reaches, so test cell k holds no seed, shape or input of another
exercise (IPython keeps every executed cell's text, so a later cell could read an earlier one, never
a later one). ``tests.grade("x", hidden="...")`` compiles that text in a fresh module when the line
runs (:func:`load_hidden`). The grader judges with the module itself, imported in its own process.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import types

from .spec import Case, Exercise, Notebook

__all__ = ["hidden_source", "load_hidden", "module_names", "reached"]


def hidden_source(notebook: Notebook, name: str) -> str:
    """The source of a module whose ``HIDDEN`` holds exercise ``name``'s hidden cases and nothing else:
    the hidden module's imports they use (made absolute, cut to the names used) and its module-level
    definitions they reach, in the module's order."""
    module = importlib.import_module(notebook.hidden)
    text = inspect.getsource(module)
    tree = ast.parse(text)
    entry = _entries(tree, notebook.hidden)
    if name not in entry:
        raise KeyError(f"{notebook.hidden}: HIDDEN has no entry for {name!r}")
    keep = reached(tree, entry[name])
    lines = text.splitlines()
    parts = ["from __future__ import annotations"] if _future(tree) else []
    body = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported = _cut_import(node, keep, module.__package__)
            if imported is not None:
                parts.append(imported)
        elif _binds(node) & keep:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
            body.append("\n".join(lines[start - 1:node.end_lineno]))
    value = ast.get_source_segment(text, entry[name])
    body.append(f"HIDDEN = {{{name!r}: {value}}}")
    return "\n".join(parts) + "\n\n\n" + "\n\n\n".join(body) + "\n"


def load_hidden(source: str, ex: Exercise) -> tuple[Case, ...]:
    """Exercise ``ex``'s hidden cases, compiled from the text the build wrote into its hidden test."""
    module = types.ModuleType(f"lmcourse_hidden_{ex.name}")
    exec(compile(source, f"<hidden cases of {ex.name}>", "exec"), module.__dict__)  # noqa: S102 (the build's text)
    cases = module.__dict__.get("HIDDEN", {}).get(ex.name)
    if not cases:
        raise LookupError(f"the hidden cases written into the test of {ex.name} hold none for it: rebuild the "
                          "notebook with `lmcourse build`")
    return tuple(cases)


def _entries(tree: ast.Module, where: str) -> dict[str, ast.expr]:
    """``HIDDEN``'s entries by exercise name: it must be one dict literal keyed by string constants,
    so each entry can be cut out alone."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "HIDDEN" for t in node.targets):
            if not isinstance(node.value, ast.Dict) or not all(
                    isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.value.keys):
                raise ValueError(f"{where}: HIDDEN must be one dict literal whose keys are the exercises' names")
            return {k.value: v for k, v in zip(node.value.keys, node.value.values)}
    raise ValueError(f"{where} defines no HIDDEN")


def module_names(tree: ast.Module) -> dict[str, list[ast.stmt]]:
    """The module-level statements binding each name (``HIDDEN``, ``__all__`` and ``__future__`` aside)."""
    bound: dict[str, list[ast.stmt]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        for n in _binds(node) - {"HIDDEN", "__all__"}:
            bound.setdefault(n, []).append(node)
    return bound


def reached(tree: ast.Module, start: ast.AST) -> set[str]:
    """The module-level names that ``start`` loads, and those their definitions load, transitively."""
    bound = module_names(tree)
    seen: set[str] = set()
    todo = [n.id for n in ast.walk(start) if isinstance(n, ast.Name)]
    while todo:
        n = todo.pop()
        if n in seen or n not in bound:
            continue
        seen.add(n)
        for node in bound[n]:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                todo += [m.id for m in ast.walk(node) if isinstance(m, ast.Name)]
    return seen


def _binds(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom):
        return {a.asname or a.name for a in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _future(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body)


def _cut_import(node: ast.Import | ast.ImportFrom, keep: set[str], package: str) -> str | None:
    """The import statement reduced to the names in ``keep`` (absolute), or None when it binds none."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return None
    names = [a for a in node.names if (a.asname or (a.name if isinstance(node, ast.ImportFrom)
                                                    else a.name.split(".")[0])) in keep]
    if not names:
        return None
    if isinstance(node, ast.Import):
        return ast.unparse(ast.Import(names=names))
    module = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level else node.module
    return ast.unparse(ast.ImportFrom(module=module, names=names, level=0))
