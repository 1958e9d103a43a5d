"""A static scan of what a student wrote, for the routes around the grader that nothing else sees.

The verdict is made outside the kernel and the notebook's reference is not in it
(:mod:`lmcourse.marking`), and the rules refuse third-party equivalents while a graded call runs;
what remains is code that reaches for what a graded kernel should not use: the course's
reference read as text (``open`` / ``inspect.getsource`` and ``exec``; without bubblewrap the
files are readable), the test machinery (``tests`` rebound, a record written by hand), the
interpreter's hooks and frames, or a third-party equivalent called from compiled code the rules
cannot see. The scan reads the submission's own cells (answers and cells the student added) as
syntax, never runs them, and flags ``source-scan`` with what it found. A flag asks a person to
look; it changes no score (a false alarm costs a TA a minute, not a student points).
"""

from __future__ import annotations

import ast
import threading

__all__ = ["FLAG", "scan_cells", "scan_source"]

# `lmcourse grade -j N` scans submissions in N threads at once, and CPython 3.11's ast module keeps one
# recursion-depth count per interpreter: two parses at once can fail with "SystemError: AST constructor
# recursion depth mismatch" (python/cpython#106905), which crashed a submission's grading. One parse at a
# time (a cell parses in microseconds), and a parse that met one outside the scan is tried again.
_PARSING = threading.Lock()

FLAG = "source-scan"

# modules whose import by a student reaches around the grader or does an exercise's work
# (tokenizer libraries: compiled code the rules cannot see when it is reached from compiled code;
# transformers is Python, which the rules see)
_MODULES = ("lmcourse.reference", "lmcourse.marking", "lmcourse.grading", "ctypes", "inspect", "importlib",
            "tiktoken", "tokenizers",
            # a file run as code without exec: runpy.run_path, a .pyc's code object, a zip on the path
            "runpy", "marshal", "zipimport", "pkgutil")
# names whose use reads code or frames, or runs text as code
_NAMES = ("exec", "eval", "compile", "__import__", "setprofile", "settrace", "meta_path", "getsource",
          "__code__", "__closure__", "f_back", "f_globals", "f_locals", "currentframe", "_getframe",
          "publish_display_data", "register_module_forward_hook", "register_module_forward_pre_hook",
          "register_module_parameter_registration_hook", "__torch_function__", "TorchFunctionMode",
          # a function rebuilt from another's code object runs as new code the rules do not know
          "CodeType", "FunctionType",
          # torch's function modes (the rules that refuse torch's own layers) switched off or popped
          "DisableTorchFunction", "DisableTorchFunctionSubclass", "_pop_torch_function_stack", "_pop_mode",
          "TorchDispatchMode", "__torch_dispatch__")
# builtins among _NAMES: as an attribute they are someone else's (model.eval() puts a torch module in
# evaluation mode) unless read from builtins itself
_BUILTINS = ("exec", "eval", "compile", "__import__")
_PATHS = ("path", "path_hooks", "path_importer_cache")
_TEXTS = ("vnd.lmcourse.record", "lmcourse/reference", "lmcourse/nn", "lmcourse/bpe", "lmcourse\\reference")


_ATTRS = ("getattr", "setattr", "delattr")
# modules whose namespace read as a dict (vars(sys)["setprofile"], sys.__dict__) names nothing the scan reads
_NAMESPACES = ("sys", "builtins", "__builtins__", "importlib", "torch")


def _hidden_name(node: ast.expr) -> bool:
    """An attribute name built in place ("__co" + "de__", an f-string, a join), or a dunder / one of
    :data:`_NAMES` written as a string; a plain variable is ordinary code (``getattr(row, column)``)."""
    if isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Call)):
        return True
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value in _NAMES or node.value.startswith("__"))


def _dotted_builtins(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("builtins", "__builtins__")


def _parse(source: str) -> ast.Module:
    with _PARSING:
        try:
            return ast.parse(source)
        except SystemError as e:    # a parse elsewhere in the process (a traceback's) overlapped: once more
            if "recursion depth mismatch" not in str(e):
                raise
            return ast.parse(source)


def scan_source(source: str) -> list[str]:
    """What one cell's code names of the above, in order of appearance, each once."""
    try:
        tree = _parse(source)
    except SyntaxError:         # IPython magics and broken cells: nothing to read as Python
        return []
    found: list[str] = []
    # the names sys goes by in this cell (import sys as _s)
    sys_names = {"sys"} | {a.asname for n in ast.walk(tree) if isinstance(n, ast.Import)
                           for a in n.names if a.name == "sys" and a.asname}

    keys = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}

    def note(what: str) -> None:
        if what not in found:
            found.append(what)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(_MODULES):
                    note(f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(_MODULES):
            note(f"from {node.module} import")
        elif isinstance(node, ast.ImportFrom) and any(a.name in _NAMES for a in node.names):
            # imported under another name (from torch.overrides import TorchFunctionMode as M)
            note(next(a.name for a in node.names if a.name in _NAMES))
        elif isinstance(node, ast.Name) and node.id in _NAMES:
            note(node.id)
        elif (isinstance(node, ast.Attribute) and node.attr in _PATHS and isinstance(node.value, ast.Name)
              and node.value.id in sys_names) or (isinstance(node, ast.ImportFrom) and node.module == "sys"
                                               and any(a.name in _PATHS for a in node.names)):
            # the reference's folder put on the path imports its modules under their bare names
            # (``import ngram``), which the graded kernel's refusal of lmcourse.reference.* does not see
            note("sys.path")
        elif isinstance(node, ast.Attribute) and node.attr in _NAMES and (
                node.attr not in _BUILTINS or _dotted_builtins(node.value)):
            note(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            hit = next((t for t in _TEXTS if t in node.value), None)
            if hit:
                note(f"the text {hit!r}")
            elif (node.value in _NAMES and node.value not in _BUILTINS) or (id(node) in keys and any(
                    node.value == m or node.value.startswith(m + ".") for m in _MODULES)):
                # a flagged name written as a string: vars(sys)["setprofile"], sys.modules["importlib"]
                # (a module's name only as a key: a folder may share it, data_dir() / "tokenizers")
                note(f"the text {node.value!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in (*_NAMESPACES, *sys_names):
            note(f"vars({node.args[0].id})")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.attr == "__dict__" and node.value.id in (*_NAMESPACES, *sys_names)):
            note(f"{node.value.id}.__dict__")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in sys_names \
                and node.attr == "modules":
            # every loaded module, the course's marking code among them (reached without naming it:
            # sys.modules[type(tests).__module__])
            note("sys.modules")
        elif isinstance(node, ast.Name) and node.id == "tests" and isinstance(node.ctx, ast.Load):
            # the test cells' object: nothing a student writes reads it
            note("tests read")
        elif isinstance(node, ast.keyword) and node.arg and node.arg.startswith("co_"):
            note("a code object rebuilt (co_ fields)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRS \
                and len(node.args) >= 2 and _hidden_name(node.args[1]):
            # getattr(f, "__co" + "de__") names a hooked attribute without writing it
            note(f"{node.func.id} with a computed or hidden name")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "tests" for t in targets):
                note("tests rebound")
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == "tests":
            note("tests rebound")
        elif isinstance(node, ast.FunctionDef) and node.name in _NAMES:
            note(node.name)             # a mode's or a tensor subclass's own __torch_function__
    return found


def scan_cells(nb, skip_tag: str = "") -> list[str]:
    """The findings in a notebook's student cells: answer cells and cells without nbgrader's
    metadata (locked and test cells are the course's; cells tagged ``skip_tag`` are the grader's)."""
    found: list[str] = []
    for cell in nb.cells:
        meta = cell.get("metadata", {})
        nbg = meta.get("nbgrader", {})
        if cell.get("cell_type") != "code" or (skip_tag and skip_tag in meta):
            continue
        if nbg and not nbg.get("solution"):
            continue
        for what in scan_source(cell.get("source", "")):
            if what not in found:
                found.append(what)
    return found
