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
import copy
import functools
import importlib
import inspect
import re
import sys
import types
from dataclasses import dataclass
from typing import Any

from lmcourse.grading import scan

__all__ = ["Refused", "binding_history", "check", "code_cells", "dotted", "free_names", "from_rules",
           "names_before", "refused_answers", "roots", "with_helpers"]

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


def _imported(name: str) -> Any:
    """The object ``name`` names where it can be imported here, else None."""
    parts = name.split(".")
    if parts[0] not in _IMPORTABLE:
        return None
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 (not a module: try the shorter prefix)
            continue
        try:
            for attribute in parts[cut:]:
                found = getattr(found, attribute)
        except AttributeError:
            return None
        return found
    return None


def _resolved(name: str) -> str:
    """``name`` read by what it is where it can be imported here, else as written."""
    found = _imported(name)
    return (dotted(found) or name) if found is not None else name


# bases every torch layer shares: a refused name among them would refuse every layer
_COMMON_BASES = ("torch.nn.modules.module.Module", "builtins.object")


def _bases(name: str) -> list[str]:
    """The classes a library class derives from (``torch.ao.nn.quantizable.MultiheadAttention`` is an
    ``nn.MultiheadAttention``): a subclass of a refused class does its work under another name."""
    found = _imported(name)
    if not isinstance(found, type):
        return []
    return [n for n in map(dotted, found.__mro__[1:]) if n and n not in _COMMON_BASES]


def _hit(name: str, refused: Refused) -> bool:
    real = _resolved(name)
    for candidate in {name, real, *_bases(name)}:
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


_LOOKUPS = ("getattr", "hasattr", "setattr", "delattr", "methodcaller", "attrgetter")
# a string that is a dotted path and nothing else ("transformers.generation.TopKLogitsWarper"); a label in a
# message, or a dict's key without dots, is not one
_WHOLE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _lookup_strings(tree: ast.Module) -> set[int]:
    """The string constants a text uses to look an attribute up: ``getattr(x, "softmax")``,
    ``methodcaller("softmax")``, ``F.__dict__["softmax"]`` (a label in a print is not one)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func.id if isinstance(node.func, ast.Name) else (
                node.func.attr if isinstance(node.func, ast.Attribute) else "")
            if called in _LOOKUPS:
                found.update(id(a) for a in node.args[:2])
        elif isinstance(node, ast.Subscript) and (
                isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__"
                or isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id in ("vars", "globals", "locals")):
            found.add(id(node.slice))       # a namespace read as a dict: F.__dict__["softmax"]; a dict's key is data
    return found


def _bound_here(tree: ast.Module) -> set[str]:
    """Names the text binds itself anywhere (definitions, assignments, parameters): its own, not an import's."""
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return bound | {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}


def check(source: str, refused: Refused, names: scan.Names | None = None,
          own: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """What the cell ``source`` uses of ``refused`` (``refused: name``), and what it builds at run time
    (flagged); ``names``: the notebook's imports (by default the cell's own); ``own``: names that are the
    student's whatever an import elsewhere says (the other exercises' answers)."""
    tree, _ = scan._read(source)
    if tree is None:
        return [], ["does not parse"]
    if names is None:
        names = scan.Names()
        names.learn(tree)
    hits: list[str] = []
    flags: list[str] = []
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    lookups = _lookup_strings(tree)
    mine = own | (_bound_here(tree) - set(names.modules) if names is not None else set())
    # a method the text's own classes define (`def softmax(self, s)`, called as `self.softmax`) is not torch's
    methods = {m.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for m in n.body
               if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        found: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in lookups and \
                _WHOLE_PATH.fullmatch(node.value) and _hit(node.value, refused):
            # a whole dotted path in a string, resolved by whatever walks it (a configurator's resolve)
            if f"refused: {node.value!r}" not in hits:
                hits.append(f"refused: {node.value!r}")
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) in lookups and (
                any(part in refused.parts for part in node.value.split("."))
                or any(_imported(f"{root}.{node.value}") is not None and _hit(f"{root}.{node.value}", refused)
                       for root in ("torch", "lmcourse"))):
            # a name looked up by a string, dotted too: attrgetter("nn.functional.softmax")(torch)
            if f"refused: {node.value!r}" not in hits:
                hits.append(f"refused: {node.value!r}")
            continue
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            name = None if isinstance(root, ast.Name) and root.id in mine else (
                names.dotted(node) if isinstance(node, ast.Attribute) else names.modules.get(node.id))
            if name:
                found = [name]
            elif isinstance(node, ast.Attribute) and _tensor_method(node.attr) and node.attr not in methods and not (
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


def roots(target: ast.expr) -> list[str]:
    """The names an assignment target binds or changes: ``a``, ``a.f``, ``a[0]``, ``(a, b)``, ``*a``."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in roots(t)]
    if isinstance(target, ast.Starred):
        return roots(target.value)
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return [target.id] if isinstance(target, ast.Name) else []


def _binds(node: ast.stmt, modules: set[str] = frozenset()) -> tuple[list[str], list[str]]:
    """(names a top-level statement binds anew, names it changes in place): a definition or a plain assignment
    replaces a name; an attribute or item set, a tuple or loop target, a method called on a name (``d.update``)
    or anything bound inside a compound statement adds to what the name holds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        # and the module names it declares global: calling it rebinds them (`global softmax; softmax = f`)
        return [node.name], [n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names]
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return [t.id for t in node.targets], []
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id], []
    changed: list[str] = []
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in (inner.targets if isinstance(inner, ast.Assign) else [inner.target]):
                changed += roots(t)
        elif isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)):
            changed += roots(inner.target)
        elif isinstance(inner, ast.withitem) and inner.optional_vars is not None:
            changed += roots(inner.optional_vars)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            changed.append(inner.name)
        elif isinstance(inner, ast.NamedExpr):
            changed += roots(inner.target)
        elif isinstance(inner, (ast.MatchAs, ast.MatchStar)) and inner.name:
            changed.append(inner.name)          # `case top_k_filter:` binds the subject to the name
        elif isinstance(inner, ast.MatchMapping) and inner.rest:
            changed.append(inner.rest)
        elif isinstance(inner, ast.Global):
            changed += inner.names
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            changed += roots(inner.func.value)
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "setattr" \
                and inner.args:
            changed += roots(inner.args[0])
    # a module's functions called (torch.manual_seed(0), plt.show()) change what the student's names hold, not it
    return [], [n for n in dict.fromkeys(changed) if n not in modules]


class _RunNow(ast.NodeTransformer):
    """A top-level statement as the graded call meets it: what it calls from a library right there ran before
    any test (``EPS = torch.softmax(z, -1).max()`` holds a number, not torch's function), so that callee is
    dropped; what it only refers to, a library class it makes an object of, or calls of the student's own
    code, stay."""

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
        # a class called here makes an object whose methods run later, inside the graded call
        # (`norm = nn.Softmax(-1)` then `norm(x)` in the answer): its name stays
        # (`tok = tiktoken.get_encoding(...)`, from a library this grader does not import, stays too)
        if library and library.split(".")[0] in _IMPORTABLE and not isinstance(_imported(library), type):
            node.func = ast.Name(id="_called_before_the_test", ctx=ast.Load())
        return node


def binding_history(sources: list[str], names: scan.Names) -> dict[str, list[list[ast.stmt]]]:
    """name -> the statements that bound it, in order and by epoch: a definition or plain assignment starts an
    epoch, every later change to the name adds to it (a statement can serve several names)."""
    held: dict[str, list[list[ast.stmt]]] = {}
    declares: dict[str, tuple[list[str], ast.stmt]] = {}
    for source in sources:
        tree, _ = scan._read(source)
        if tree is None:
            continue
        for node in tree.body:
            anew, changed = _binds(node, set(names.modules))
            # a function that declares module names global rebinds them where it is called
            called = [declares[c.func.id] for c in ast.walk(node) if isinstance(c, ast.Call)
                      and isinstance(c.func, ast.Name) and c.func.id in declares]
            for name in anew:
                held.setdefault(name, []).append([node])
                declares.pop(name, None)
            for name in changed:
                held.setdefault(name, [[]])[-1].append(node)
            for globals_, definition in called:
                for name in globals_:
                    held.setdefault(name, [[]])[-1].append(definition)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and changed:
                declares[node.name] = (changed, node)
    return held


def _bindings(sources: list[str], names: scan.Names) -> dict[str, str]:
    """name -> the text of what it holds after ``sources`` ran in order: the last definition or plain
    assignment, and every change made to it after that (library calls as :class:`_RunNow` reads them)."""
    texts: dict[int, str] = {}

    def text(node: ast.stmt) -> str:
        if id(node) not in texts:
            texts[id(node)] = ast.unparse(node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                    ast.ClassDef))
                                          else _RunNow(names).visit(copy.deepcopy(node)))
        return texts[id(node)]

    return {name: "\n".join(map(text, epochs[-1])) for name, epochs in binding_history(sources, names).items()}


def _scope_bound(body: list[ast.stmt], args: ast.arguments | None = None) -> set[str]:
    """Names a scope binds itself: its parameters, and what its own statements assign, define or import
    (nested functions and classes bind in their own scope; their names are bound here)."""
    bound = {a.arg for a in ([*args.posonlyargs, *args.args, *args.kwonlyargs] +
                             [a for a in (args.vararg, args.kwarg) if a])} if args else set()
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return bound


def free_names(tree: ast.Module) -> set[str]:
    """Names a text reads in some scope that neither that scope nor an enclosing one of the text binds: what it
    takes from the rest of the notebook (a parameter named like a global elsewhere hides it only in its own
    function)."""
    free: set[str] = set()

    def visit(body: list[ast.AST], enclosing: set[str], args: ast.arguments | None = None) -> None:
        here = enclosing | _scope_bound([b for b in body if isinstance(b, ast.stmt)], args)
        todo = list(body)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.extend([*node.decorator_list, *node.args.defaults, *node.args.kw_defaults])
                visit(node.body, here, node.args)
                continue
            if isinstance(node, ast.Lambda):
                todo.extend(node.args.defaults)
                visit([node.body], here, node.args)
                continue
            if isinstance(node, ast.ClassDef):
                todo.extend([*node.decorator_list, *node.bases, *node.keywords])
                visit(node.body, here)
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in here:
                free.add(node.id)
            todo.extend(n for n in ast.iter_child_nodes(node) if n is not None)

    visit(tree.body, set())
    return free


def with_helpers(answer: str, definitions: dict[str, str]) -> str:
    """The answer's text and, followed name by name, the text of what it takes from the other cells (a helper
    defined elsewhere runs inside the graded call as much as the answer does)."""
    texts, seen, todo = [answer], set(), [answer]
    while todo:
        tree, _ = scan._read(todo.pop())
        if tree is None:
            continue
        for name in sorted(free_names(tree) & set(definitions) - seen):
            seen.add(name)
            texts.append(definitions[name])
            todo.append(definitions[name])
    return "\n".join(texts)


def code_cells(nb) -> tuple[list, dict, list]:
    """A notebook's code cells, each one's index by its grade id, and their syntax trees (None: no parse)."""
    cells = [c for c in nb.cells if c.get("cell_type") == "code"]
    by_id = {(c.get("metadata", {}).get("nbgrader") or {}).get("grade_id"): i for i, c in enumerate(cells)}
    return cells, by_id, [scan._read(c.get("source", ""))[0] for c in cells]


def names_before(trees: list, test: int) -> scan.Names:
    """The names the cells before the test cell import, as the scan reads them."""
    names = scan.Names()
    for tree in trees[:test]:
        if tree is not None:
            names.learn(tree)
    return names


def refused_answers(nb, notebook: str) -> dict[str, str]:
    """exercise -> why it scores 0: its answer, as its test cell meets it, names what the exercise refuses.
    That is what the cells before the test bind the answer's name to (the answer cell's other statements ran
    before the test, like any cell's), and, followed name by name through each scope's free names, what it
    takes from those cells: the binding in force before the test, with every later change to it. Imports count from the
    cells before the test. The names other exercises answer with are the student's own and are followed only
    where a cell that is not an answer binds them: each answer is judged on its own, and a later exercise's test
    runs the reference's in its place (one mistake costs once)."""
    from lmcourse.marking.notebooks import load

    exercises = load(notebook).exercises
    cells, by_id, trees = code_cells(nb)
    answered = {ex.answer or ex.name for ex in exercises}
    answer_cells = {by_id[ex.name] for ex in exercises if ex.name in by_id}
    out: dict[str, str] = {}
    for ex in exercises:
        refused = _exercise_list(notebook, ex.name) if ex.name in by_id else None
        if refused is None:
            continue
        test = by_id.get(ex.test_id, len(cells))
        names = names_before(trees, test)
        name = ex.answer or ex.name
        held = _bindings([c.get("source", "") for c in cells[:test]], names)
        # another exercise's answer is judged on its own: its name is followed only where a cell that is not an
        # answer binds it (a helper hidden in a question's cell is followed like any other)
        plain = _bindings([c.get("source", "") for i, c in enumerate(cells[:test]) if i not in answer_cells], names)
        for other in answered - {name}:
            held.pop(other, None)
            if other in plain:
                held[other] = plain[other]
        # the answer's name as the test meets it; the answer cell's other statements count like any cell's (a
        # check against torch's own function at the end of the cell runs before the test, not in it)
        answer = held.pop(name, "")
        hits, _ = check(with_helpers(answer, held), refused, names, own=frozenset(answered - {name}))
        if hits:
            used = ", ".join(h.removeprefix("refused: ") for h in hits)
            out[ex.name] = f"the answer uses {used}, which this exercise refuses: {refused.reason}"
    return out


if __name__ == "__main__":      # python -m lmcourse.grading.how FILE: the check of one file against torch softmax
    print(check(open(sys.argv[1]).read(), Refused(parts=("softmax",))))
