"""Answers whose code the judge cannot read: a flag for a person, never a score.

The judge reads "how" from an answer's text (:func:`lmcourse.grading.how.refused_answers`); an answer that only
points at a value some unreadable code made (``elman_step = _impl["elman_step"]``, with ``_impl`` visibly ``{}``
and filled by a text run through a code runner) hands the judge nothing to read. :func:`unreadable_answers` finds
those. An answer the exercise graded as code (the reference's name of it is a function or a class) is
*unreadable* when the binding its test cell meets (the same one ``refused_answers`` reads) is none of the
notebook's visible code and no library's either:

- an item or attribute of a value the student's cells hold, where no visible statement puts code into that value
  (``_impl["x"]``, ``_impl.get("x")``, ``ns.x``, ``getattr(ns, "x")`` with ``_impl = {}`` or
  ``ns = types.SimpleNamespace()`` and nothing visible storing code in them), or a namespace read at run time
  (``vars()[...]``, ``globals()[...]``, ``globals().get(...)``) whose key names nothing visibly bound;
- a name no cell before the test binds visibly (a hidden text defined it), or a name that is itself bound so;
- readable code that uses such a name: a free name of the answer, followed through its helpers (not through
  other exercises' answers: a later test brings the reference's in their place), that no cell before the test
  binds, is not a builtin, not IPython's, not imported (a star import turns this check off);
- a library call, decorator or base class applied to such a value (``torch.compile(_impl["x"])``);
- a ``def`` or ``lambda`` that only forwards its parameters to such a value
  (``def elman_step(*a, **k): return _impl["elman_step"](*a, **k)``).

Readable, so never flagged: a ``def``, ``class`` or ``lambda`` of the answer (its decorators and bases readable
too); a value that is or calls the notebook's own code (``softmax = my_softmax``, ``lr_schedule =
make_schedule(...)``, ``functools.partial(my_f, dim=-1)``, ``torch.no_grad()(my_adamw)``, an instance of a class
the notebook defines, an item of a dict the notebook fills with its functions); a library's name
(``softmax = torch.softmax``: the refused-names check's business). Stores made inside a function's body are not
read: a registry filled by a decorator (``_registry[f.__name__] = f``) leaves its items unread, flagged; that
costs no points. The wiring (:func:`lmcourse.marking.grader.unreadable_findings`) flags only answers that scored.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
from dataclasses import dataclass, field

from lmcourse.grading import scan
from lmcourse.grading.how import binding_history, code_cells, free_names, names_before, roots, with_helpers

__all__ = ["UNREADABLE", "unreadable_answers"]

UNREADABLE = "an answer the judge cannot read"

OWN, LIBRARY, DATA = "own code", "a library's", "data"

# values made empty and filled later: what an item of one holds is whatever was stored into it
_CONTAINERS = ("builtins.dict", "builtins.list", "builtins.set", "builtins.tuple", "builtins.object",
               "builtins.type", "types.SimpleNamespace", "types.ModuleType", "collections", "argparse.Namespace")
_NAMESPACES = ("vars", "globals", "locals", "dir")
# names IPython's kernel binds in every notebook
_KERNEL = ("display", "get_ipython", "In", "Out", "exit", "quit", "_", "__", "___", "_i", "_ii", "_iii", "_ih",
           "_oh", "_dh")
# methods that read an item or attribute of a value (``d.get("x")``)
_READS = ("get", "pop", "setdefault", "__getitem__", "__getattribute__", "__getattr__", "values", "items",
          "popitem")


def _combine(kinds: list[str]) -> str:
    """One kind for a value made of parts: an unreadable part makes it unreadable (its reason), own code makes
    it the student's, a library's part a library's, else data."""
    for kind in kinds:
        if kind not in (OWN, LIBRARY, DATA):
            return kind
    return OWN if OWN in kinds else LIBRARY if LIBRARY in kinds else DATA


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _captures(pattern: ast.pattern) -> set[str]:
    """The names a case pattern binds."""
    return {n.name if isinstance(n, (ast.MatchAs, ast.MatchStar)) else n.rest for n in ast.walk(pattern)
            if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name or isinstance(n, ast.MatchMapping) and n.rest}


def _params(args: ast.arguments) -> set[str]:
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}


def _only_forwards(body: list[ast.stmt] | ast.expr, params: set[str]) -> ast.expr | None:
    """The callee a function's body hands its parameters to and does nothing else with (``return f(*a, **k)``),
    else None."""
    if isinstance(body, list):
        body = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], (ast.Return, ast.Expr)) or body[0].value is None:
            return None
        body = body[0].value
    if not isinstance(body, ast.Call):
        return None
    passed = [a.value if isinstance(a, ast.Starred) else a for a in body.args] + [k.value for k in body.keywords]
    if not all(isinstance(a, ast.Name) and a.id in params for a in passed):
        return None
    if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(body.func)):
        return None
    return body.func


@dataclass
class _Reader:
    """What the names of the cells before a test hold, read as :data:`OWN`, :data:`LIBRARY`, :data:`DATA` or a
    reason the judge cannot read it."""
    history: dict[str, list[list[ast.stmt]]]
    names: scan.Names
    _memo: dict[tuple[str, int], str] = field(default_factory=dict)
    _busy: set[tuple[str, int]] = field(default_factory=set)
    _epoch: dict[str, int] = field(default_factory=dict)      # the epoch of a name being read now

    # ------------------------------------------------------------------ names
    def name(self, name: str) -> str:
        """What ``name`` holds; inside its own binding (``f = torch.compile(f)``), what it held before."""
        epochs = self.history.get(name, [])
        at = self._epoch.get(name, len(epochs)) - 1
        if at < 0:
            if name in self.names.modules or hasattr(builtins, name):
                return LIBRARY
            return f"`{name}`, which no cell the judge reads binds"
        key = (name, at)
        if key in self._memo:
            return self._memo[key]
        if key in self._busy:
            return OWN          # a loop of names: nothing unread enters it
        self._busy.add(key)
        before = self._epoch.get(name)
        self._epoch[name] = at
        try:
            kinds = [self.value(v) for v in self._values(name, epochs[at])]
            kind = _combine(kinds) if kinds else self._unbound(name, at)
        finally:
            self._busy.discard(key)
            if before is None:
                self._epoch.pop(name)
            else:
                self._epoch[name] = before
        self._memo[key] = kind
        return kind

    def _unbound(self, name: str, at: int) -> str:
        """Only changed in place in this epoch (``f.cache = {}``): what the epoch before bound, if any."""
        if at > 0:
            self._epoch[name] = at
            return self.name(name)
        return LIBRARY if name in self.names.modules else f"`{name}`, which no cell the judge reads binds"

    def _statements(self, statements: list[ast.stmt]):
        """The nodes of ``statements`` that run when they do: not inside a function's body, but for a function
        that declares module names global (it rebinds them where it is called)."""
        todo = list(statements)
        while todo:
            node = todo.pop(0)
            yield node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(isinstance(g, ast.Global) for g in ast.walk(node)):
                    todo.extend(node.body)
                continue
            if isinstance(node, (ast.ClassDef, ast.Lambda)):
                continue
            todo.extend(ast.iter_child_nodes(node))

    def _values(self, name: str, statements: list[ast.stmt]) -> list[ast.expr | str]:
        """What ``name`` is given in ``statements``: expressions, or a kind where the statement says it."""
        out: list[ast.expr | str] = []
        for node in self._statements(statements):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                out.append(self._definition(node))
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    out += self._given(target, node.value, name)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                out += self._given(node.target, node.value, name)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                out += [self.item(node.iter)] if name in roots(node.target) else []
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                out += [self.item(node.context_expr)] if name in roots(node.optional_vars) else []
            elif isinstance(node, ast.Match):
                out += [self._captured(node.subject, case.pattern) for case in node.cases
                        if name in _captures(case.pattern)]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out += [LIBRARY for a in node.names if (a.asname or a.name.split(".")[0]) == name]
        return out

    def _captured(self, subject: ast.expr, pattern: ast.pattern) -> ast.expr | str:
        """What a case binds: the subject itself (``case f:``, ``case f as g:``), else a part of it."""
        while isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
            pattern = pattern.pattern           # `case (x as y)`: the inner pattern decides
        return subject if isinstance(pattern, ast.MatchAs) else self.item(subject)

    def _given(self, target: ast.expr, value: ast.expr, name: str) -> list[ast.expr | str]:
        if isinstance(target, ast.Name):
            return [value] if target.id == name else []
        if isinstance(target, (ast.Tuple, ast.List)) and name in roots(target):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) and not any(
                    isinstance(t, ast.Starred) for t in target.elts):
                return [v for t, v in zip(target.elts, value.elts) for v in self._given(t, v, name)]
            return [self.item(value)]
        if isinstance(target, ast.Starred):
            return self._given(target.value, value, name)
        return []

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
        """A definition is the student's code, unless a decorator or base it hands itself to is unreadable, or
        its body only forwards to an unreadable callee."""
        around = [*node.decorator_list, *(node.bases if isinstance(node, ast.ClassDef) else [])]
        kind = _combine([self.value(e) for e in around] + [OWN])
        if kind != OWN or isinstance(node, ast.ClassDef):
            return kind
        return self._forwarding(_only_forwards(node.body, _params(node.args)), kind)

    def _forwarding(self, callee: ast.expr | None, kind: str) -> str:
        if callee is None:
            return kind
        to = self.value(callee)
        return f"a function that only forwards to {to}" if to not in (OWN, LIBRARY, DATA) else kind

    # ------------------------------------------------------------------ values
    def value(self, expr: ast.expr | str) -> str:
        if isinstance(expr, str):
            return expr
        if isinstance(expr, (ast.Constant, ast.JoinedStr)):
            return DATA
        if isinstance(expr, ast.Lambda):
            return self._forwarding(_only_forwards(expr.body, _params(expr.args)), OWN)
        if isinstance(expr, ast.Name):
            return self.name(expr.id)
        if isinstance(expr, ast.Attribute):
            if self._kernel_namespace(expr):
                return f"a name read from the kernel's namespace ({ast.unparse(expr)[:40]})"
            return LIBRARY if self.names.dotted(expr) else self.item(expr.value)
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr)
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Starred):
            return self.value(expr.value)
        return _combine([self.value(e) for e in ast.iter_child_nodes(expr) if isinstance(e, ast.expr)])

    def _kernel_namespace(self, expr: ast.expr) -> bool:
        """``__main__.x``, ``sys.modules["__main__"]``: the notebook's namespace read as a module's."""
        dotted = self.names.dotted(expr) if isinstance(expr, ast.Attribute) else (
            self.names.modules.get(expr.id) if isinstance(expr, ast.Name) else None)
        return bool(dotted) and _within(dotted, ("__main__", "sys.modules"))

    def _namespace_read(self, expr: ast.expr) -> bool:
        """``globals()``, ``vars()``: the kernel's own namespace, whatever ran in it."""
        if self._kernel_namespace(expr):
            return True
        return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in _NAMESPACES \
            and not expr.args and expr.func.id not in self.history

    def _keyed(self, container: ast.expr, key: ast.expr | None) -> str:
        """An item of ``container`` under ``key``: a namespace read with a key that names a visible binding
        reads that binding."""
        if self._namespace_read(container):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in self.history:
                return self.name(key.value)
            return f"a name looked up in {ast.unparse(container)} at run time"
        return self.item(container)

    def _subscript(self, expr: ast.Subscript) -> str:
        return self._keyed(expr.value, expr.slice)

    def _call(self, expr: ast.Call) -> str:
        func = expr.func
        if isinstance(func, ast.Name) and func.id not in self.history:
            if func.id in _NAMESPACES and not expr.args:
                return f"a name looked up in {ast.unparse(expr)} at run time"
            if func.id == "getattr" and expr.args:
                return LIBRARY if self._library(expr.args[0]) else self.item(expr.args[0])
        if isinstance(func, ast.Attribute) and func.attr in _READS and not self.names.dotted(func):
            return self._keyed(func.value, expr.args[0] if expr.args else None)
        kind = self.value(func)
        if kind != LIBRARY:
            return kind
        # a library applied to something: what it was given (torch.compile(my_step) is the student's code)
        return _combine([LIBRARY, *(self.value(a) for a in [*expr.args, *(k.value for k in expr.keywords)])])

    def _library(self, expr: ast.expr) -> bool:
        return bool(self.names.dotted(expr)) if isinstance(expr, ast.Attribute) else (
            isinstance(expr, ast.Name) and expr.id in self.names.modules and expr.id not in self.history)

    # ------------------------------------------------------------------ items of values
    def item(self, container: ast.expr) -> str:
        """What an item or attribute of ``container`` holds: for a name the student's cells hold, what they
        visibly stored into it; for a value made in place, what it was made of."""
        if self._namespace_read(container):
            return f"a name looked up in {ast.unparse(container)} at run time"
        if isinstance(container, ast.Attribute) and container.attr == "__dict__":
            return self.item(container.value)
        if isinstance(container, ast.Name):
            return self._stored(container.id)
        if isinstance(container, (ast.Subscript, ast.Attribute)) and not self._library(container):
            return self.item(container.value)
        if isinstance(container, ast.Call) and isinstance(container.func, ast.Name) and container.func.id == "vars" \
                and len(container.args) == 1 and "vars" not in self.history:
            return self.item(container.args[0])        # vars(ns)["f"] is ns.f
        kind = self._made_of(container)
        return kind if kind != DATA else f"an item of {ast.unparse(container)[:40]}, which holds no code"

    def _made_of(self, expr: ast.expr) -> str:
        """A container made empty (``{}``, ``dict()``, ``SimpleNamespace()``) holds what it was given."""
        if isinstance(expr, ast.Call) and self._container_type(expr.func):
            return _combine([self.value(a) for a in [*expr.args, *(k.value for k in expr.keywords)]])
        return self.value(expr)

    def _container_type(self, func: ast.expr) -> bool:
        name = self.names.dotted(func) if isinstance(func, ast.Attribute) else (
            self.names.modules.get(func.id) or (f"builtins.{func.id}" if hasattr(builtins, func.id) else None)
            if isinstance(func, ast.Name) and func.id not in self.history else None)
        return bool(name) and _within(name, _CONTAINERS)

    @staticmethod
    def _fills(call: ast.Call, name: str) -> bool:
        """A call that may store its arguments into ``name``: a method of it (``d.update(...)``), or setattr."""
        if isinstance(call.func, ast.Attribute):
            return name in roots(call.func.value)
        return isinstance(call.func, ast.Name) and call.func.id == "setattr" and bool(call.args) and \
            name in roots(call.args[0])

    def _stored(self, name: str) -> str:
        """What the value ``name`` holds was visibly given: its making, and every item or attribute set on it,
        every method called on it with arguments (``d.update(...)``), in the cells before the test."""
        epochs = self.history.get(name, [])
        if not epochs:
            return LIBRARY if name in self.names.modules or hasattr(builtins, name) else \
                f"an item of `{name}`, which no cell the judge reads binds"
        given: list[str] = []
        for node in self._statements([s for epoch in epochs[-1:] for s in epoch]):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                given.append(self._definition(node))
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name) and target.id == name:
                        given.append(self._made_of(node.value))
                    elif name in roots(target):
                        given.append(self.value(node.value))
            elif isinstance(node, ast.Call) and self._fills(node, name):
                given += [self.value(a) for a in [*node.args, *(k.value for k in node.keywords)]
                          if not (isinstance(a, ast.Name) and a.id == name)]
            elif isinstance(node, (ast.For, ast.AsyncFor)) and name in roots(node.target):
                given.append(self.item(node.iter))
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    (a.asname or a.name.split(".")[0]) == name for a in node.names):
                given.append(LIBRARY)
        kind = _combine(given)
        return kind if kind != DATA else f"an item of `{name}`, which no visible cell fills with code"


def _unbound_helpers(reader: _Reader, name: str, answered: set[str]) -> list[str]:
    """The names the answer's code takes from the rest of the notebook (followed through its helpers) that no
    cell before the test binds: a hidden text bound them (the other exercises' answers aside: a test may bring
    the reference's in their place)."""
    if "*" in reader.names.modules:
        return []       # a star import binds names no text shows
    texts = {n: "\n".join(ast.unparse(s) for s in epochs[-1]) for n, epochs in reader.history.items()
             if epochs and (n == name or n not in answered)}
    tree, _ = scan._read(with_helpers(texts.get(name, ""), texts))
    free = free_names(tree) if tree is not None else set()
    return sorted(n for n in free - set(reader.history) - set(reader.names.modules) - answered
                  if not hasattr(builtins, n) and n not in _KERNEL)


@functools.cache
def _graded_as_code(reference: str, name: str) -> bool:
    """Whether the reference answers ``name`` with a function or a class (not a letter or a number)."""
    try:
        return callable(getattr(importlib.import_module(reference), name, None))
    except Exception:  # noqa: BLE001 (a reference that does not import here: nothing to say of it)
        return False


def unreadable_answers(nb, notebook: str) -> dict[str, str]:
    """exercise -> why the judge cannot read its answer (see the module's docstring), for every exercise graded
    as code whose answer, as its test cell meets it, is not code the notebook shows."""
    from lmcourse.marking.notebooks import load

    spec = load(notebook)
    cells, by_id, trees = code_cells(nb)
    answered = {ex.answer or ex.name for ex in spec.exercises}
    out: dict[str, str] = {}
    for ex in spec.exercises:
        name = ex.answer or ex.name
        if ex.name not in by_id or not _graded_as_code(spec.reference, name):
            continue
        test = by_id.get(ex.test_id, len(cells))
        names = names_before(trees, test)
        reader = _Reader(binding_history([c.get("source", "") for c in cells[:test]], names), names)
        kind = reader.name(name)
        if name not in reader.history and name not in names.modules:
            out[ex.name] = f"no cell before its test binds `{name}` where the judge can read it"
        elif kind not in (OWN, LIBRARY, DATA):
            out[ex.name] = f"`{name}` is {kind}" if not kind.startswith("`") else f"`{name}` is bound to {kind}"
        elif kind == OWN and (unbound := _unbound_helpers(reader, name, answered)):
            out[ex.name] = f"`{name}` uses {', '.join(f'`{n}`' for n in unbound[:3])}, which no cell the judge " \
                           "reads binds"
    return out
