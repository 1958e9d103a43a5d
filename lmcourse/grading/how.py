""""How", checked in the grader where no submission reaches: per exercise a declarative list of what a graded
answer must not use, checked against the answer cell's syntax tree.

The judge (:func:`lmcourse.marking.grader.judge_notebook`, under ``lmcourse grade`` and plain nbgrader alike)
scores an exercise 0 when its answer cell names what the exercise refuses (:func:`refused_answers`). The
in-kernel rules refuse the same calls as they happen and tell a student at home; a submission can switch
those off from inside its kernel, but not this reading of its text.

A list (:class:`Refused`) names modules and objects by their dotted names (a name and all inside it), and
parts of torch's names (``softmax``: every ``torch.*`` name whose last part holds it, and a tensor method of
that name on any value, ``x.softmax(-1)``). A name the student wrote is read through the notebook's imports
(:class:`scan.Names`: ``import torch.nn.functional as F; F.softmax``), then imported here and read by what
it is (``from torch.nn import MultiheadAttention`` is ``torch.nn.modules.activation.MultiheadAttention``),
so an alias or a re-export reaches the same entry. What a cell builds as it runs (``getattr(F, name)``
with ``name`` not written out, ``__import__``, ``importlib``) is not resolved: the scan flags it for a person.

:func:`from_rules` reads an exercise's :class:`lmcourse.marking.rules.Rules` into a list, so the two
engines refuse the same things (``bench/how_measure.py`` measures them on the catalogues).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
import types
from dataclasses import dataclass
from typing import Any

from lmcourse.grading import scan

__all__ = ["Refused", "check", "dotted", "from_rules", "refused_answers"]

# modules whose names the check imports to read what a name is (the libraries a notebook imports)
_IMPORTABLE = ("torch", "lmcourse", "numpy", "math", "collections", "functools", "itertools")
# names built at run time: the check cannot say what they reach
# torch's modules that run an operation named by a part of a refused torch name (the rules refuse the kernel
# wherever it is reached; a static list names the module too)
_RUNS = {"softmax": ("torch.nn.Softmax", "torch.nn.Softmax2d", "torch.nn.LogSoftmax", "torch.nn.MultiheadAttention"),
         "softmin": ("torch.nn.Softmin",),
         "scaled_dot_product": ("torch.nn.MultiheadAttention", "torch.nn.Transformer"),
         "multi_head_attention": ("torch.nn.MultiheadAttention", "torch.nn.Transformer"),
         "rnn_tanh": ("torch.nn.RNN", "torch.nn.RNNCell"), "rnn_relu": ("torch.nn.RNN", "torch.nn.RNNCell"),
         "lstm": ("torch.nn.LSTM", "torch.nn.LSTMCell"), "gru": ("torch.nn.GRU", "torch.nn.GRUCell"),
         "layer_norm": ("torch.nn.LayerNorm",), "group_norm": ("torch.nn.GroupNorm",),
         "batch_norm": ("torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d"), "rms_norm": ("torch.nn.RMSNorm",),
         "instance_norm": ("torch.nn.InstanceNorm1d",), "adam": ("torch.optim.Adam", "torch.optim.AdamW"),
         "transformer_encoder_layer": ("torch.nn.TransformerEncoderLayer",)}
_COMPUTED = ("getattr", "__import__", "import_module", "vars", "globals", "eval", "exec")


@dataclass(frozen=True)
class Refused:
    names: tuple[str, ...] = ()        # dotted names: a module or object and everything inside it
    parts: tuple[str, ...] = ()        # parts of torch names (and of methods on any value)
    reason: str = ""


def dotted(obj: Any) -> str | None:
    """The dotted name an object is defined under (``torch.nn.modules.activation.MultiheadAttention``)."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    obj = getattr(obj, "__func__", obj)
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{name}" if module and name else None


def from_rules(rules: Any) -> Refused:
    """Today's rules of an exercise as a list: the course code and classes they refuse, the modules,
    packages and libraries, the torch names and kernels (a kernel read as a torch name part)."""
    targets = list(rules.references) + [t for targets, _ in rules.extra for t in targets]
    names = [n for n in map(dotted, targets) if n]
    names += [*rules.modules, *rules.packages, *rules.libraries]
    parts = tuple(dict.fromkeys((*rules.torch, *rules.kernels)))
    names += [_resolved(m) for p in parts for part, modules in _RUNS.items() if part in p or p in part for m in modules]
    return Refused(tuple(dict.fromkeys(names)), parts, rules.reason)


def _within(name: str, refused: tuple[str, ...]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in refused)


def _resolved(name: str) -> str:
    """``name`` read by what it is where it can be imported here, else as written."""
    parts = name.split(".")
    if parts[0] not in _IMPORTABLE:
        return name
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 (not a module: try the shorter prefix)
            continue
        try:
            for attribute in parts[cut:]:
                found = getattr(found, attribute)
        except AttributeError:
            return name
        return dotted(found) or name
    return name


def _hit(name: str, refused: Refused) -> bool:
    real = _resolved(name)
    for candidate in {name, real}:
        if _within(candidate, refused.names):
            return True
        if candidate.startswith("torch") and any(p in part for part in candidate.split(".")[1:] for p in refused.parts):
            return True
    return False


def _tensor_method(attribute: str) -> bool:
    """Whether ``x.attribute`` can be one of torch's tensor methods (``x.softmax``): an attribute of the
    student's own objects that merely holds the word (``self.softmax_scale``) is not."""
    import torch

    return callable(getattr(torch.Tensor, attribute, None))


def check(source: str, refused: Refused, names: scan.Names | None = None) -> tuple[list[str], list[str]]:
    """What the cell ``source`` uses of ``refused`` (``refused: name``), and what it builds at run time
    (flagged); ``names``: the notebook's imports (by default the cell's own)."""
    tree, _ = scan._read(source)
    if tree is None:
        return [], ["does not parse"]
    if names is None:
        names = scan.Names()
        names.learn(tree)
    hits: list[str] = []
    flags: list[str] = []
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    # a method the text's own classes define (`def softmax(self, s)`, called as `self.softmax`) is not torch's
    own = {m.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for m in n.body
           if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        found: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in refused.parts:
            # a refused name as a string: getattr(x, "softmax"), methodcaller("softmax"), F.__dict__["softmax"]
            if f"refused: {node.value!r}" not in hits:
                hits.append(f"refused: {node.value!r}")
            continue
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
            name = names.dotted(node) if isinstance(node, ast.Attribute) else names.modules.get(node.id)
            if name:
                found = [name]
            elif isinstance(node, ast.Attribute) and _tensor_method(node.attr) and node.attr not in own and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")) and any(
                    p in node.attr for p in refused.parts):
                found = [f"torch.Tensor.{node.attr}"]     # a method on a value: a tensor's, for all we know
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if called in _COMPUTED and not all(isinstance(a, ast.Constant) for a in node.args[1:]):
                flags.append(f"a name built at run time: {ast.unparse(node)[:60]}")
            elif called == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                base = names.dotted(node.args[0]) if isinstance(node.args[0], ast.Attribute) else (
                    names.modules.get(node.args[0].id) if isinstance(node.args[0], ast.Name) else None)
                if base:
                    found = [f"{base}.{node.args[1].value}"]
        for name in found:
            if _hit(name, refused) and f"refused: {name}" not in hits:
                hits.append(f"refused: {name}")
    flags += [f for f in scan.scan_source(source, names) if f.startswith((scan.COMPUTED, scan.LOADING))]
    return hits, list(dict.fromkeys(flags))


@functools.cache
def _exercise_list(notebook: str, exercise: str) -> Refused | None:
    from lmcourse.marking.notebooks import load

    ex = load(notebook).exercise(exercise)
    return None if ex.rules is None else from_rules(ex.rules())


def _roots(target: ast.expr) -> list[str]:
    """The names an assignment target binds or changes: ``a``, ``a.f``, ``a[0]``, ``(a, b)``, ``*a``."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _roots(t)]
    if isinstance(target, ast.Starred):
        return _roots(target.value)
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return [target.id] if isinstance(target, ast.Name) else []


def _binds(node: ast.stmt) -> tuple[list[str], list[str]]:
    """(names a top-level statement binds anew, names it changes in place): a definition or a plain assignment
    replaces a name; an attribute or item set, a tuple or loop target, a method called on a name (``d.update``)
    or anything bound inside a compound statement adds to what the name holds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name], []
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return [t.id for t in node.targets], []
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id], []
    changed: list[str] = []
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in (inner.targets if isinstance(inner, ast.Assign) else [inner.target]):
                changed += _roots(t)
        elif isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)):
            changed += _roots(inner.target)
        elif isinstance(inner, ast.withitem) and inner.optional_vars is not None:
            changed += _roots(inner.optional_vars)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            changed.append(inner.name)
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            changed += _roots(inner.func.value)
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "setattr" \
                and inner.args:
            changed += _roots(inner.args[0])
    return [], list(dict.fromkeys(changed))


class _RunNow(ast.NodeTransformer):
    """A top-level statement as the graded call meets it: what it calls from a library right there ran before
    any test (``EPS = torch.softmax(z, -1).max()`` holds a number, not torch's function), so that callee is
    dropped; what it only refers to, or calls of the student's own code, stay."""

    def __init__(self, names: scan.Names):
        self.names = names

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        library = self.names.dotted(func) if isinstance(func, ast.Attribute) else (
            self.names.modules.get(func.id) if isinstance(func, ast.Name) else None)
        if library:
            node.func = ast.Name(id="_called_before_the_test", ctx=ast.Load())
        return node


def _bindings(sources: list[str], names: scan.Names) -> dict[str, str]:
    """name -> the text of what it holds after ``sources`` ran in order: the last definition or plain
    assignment, and every change made to it after that."""
    held: dict[str, list[str]] = {}
    for source in sources:
        tree, _ = scan._read(source)
        if tree is None:
            continue
        for node in tree.body:
            anew, changed = _binds(node)
            if not anew and not changed:
                continue
            text = ast.unparse(node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                               else _RunNow(names).visit(node))
            for name in anew:
                held[name] = [text]
            for name in changed:
                held.setdefault(name, []).append(text)
    return {name: "\n".join(texts) for name, texts in held.items()}


def _free_names(tree: ast.Module) -> set[str]:
    """Names a text reads that it binds nowhere itself (a parameter, an assignment, a loop or comprehension
    variable, an import, a definition): what it takes from the rest of the notebook."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def _with_helpers(answer: str, definitions: dict[str, str]) -> str:
    """The answer's text and, followed name by name, the text of what it takes from the other cells (a helper
    defined elsewhere runs inside the graded call as much as the answer does)."""
    texts, seen, todo = [answer], set(), [answer]
    while todo:
        tree, _ = scan._read(todo.pop())
        if tree is None:
            continue
        for name in sorted(_free_names(tree) & set(definitions) - seen):
            seen.add(name)
            texts.append(definitions[name])
            todo.append(definitions[name])
    return "\n".join(texts)


def refused_answers(nb, notebook: str) -> dict[str, str]:
    """exercise -> why it scores 0: its answer, as its test cell meets it, names what the exercise refuses.
    That is the answer cell (the code cell whose grade id is the exercise's name), what any cell before the
    test rebinds its name to, and, followed name by name, what it takes from the cells before the test (the
    bindings in force there, with every later change to them). Names are read through the imports of every
    code cell. The names other exercises answer with are not followed: each answer is judged on its own, and a
    later exercise's test runs the reference's in its place (one mistake costs once)."""
    from lmcourse.marking.notebooks import load

    exercises = load(notebook).exercises
    cells = [c for c in nb.cells if c.get("cell_type") == "code"]
    names = scan.Names()
    for cell in cells:
        tree, _ = scan._read(cell.get("source", ""))
        if tree is not None:
            names.learn(tree)
    answered = {ex.answer or ex.name for ex in exercises}
    by_id = {(c.get("metadata", {}).get("nbgrader") or {}).get("grade_id"): i for i, c in enumerate(cells)}
    out: dict[str, str] = {}
    for ex in exercises:
        refused = _exercise_list(notebook, ex.name) if ex.name in by_id else None
        if refused is None:
            continue
        own, test = by_id[ex.name], by_id.get(ex.test_id, len(cells))
        before = [c.get("source", "") for i, c in enumerate(cells) if i < test and i != own]
        held = _bindings(before, names)
        answer = cells[own].get("source", "")
        # the answer's name bound again after its cell, before its test
        rebound = _bindings([c.get("source", "") for c in cells[own + 1:test]], names).get(ex.answer or ex.name, "")
        definitions = {k: v for k, v in held.items() if k not in answered}
        hits, _ = check(_with_helpers(answer + "\n" + rebound, definitions), refused, names)
        if hits:
            used = ", ".join(h.removeprefix("refused: ") for h in hits)
            out[ex.name] = f"the answer uses {used}, which this exercise refuses: {refused.reason}"
    return out


if __name__ == "__main__":      # python -m lmcourse.grading.how FILE: the check of one file against torch softmax
    print(check(open(sys.argv[1]).read(), Refused(parts=("softmax",))))
