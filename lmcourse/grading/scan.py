"""A static scan of what a student wrote, for the routes around the grader that nothing else sees.

The verdict is made outside the kernel and the notebook's reference is not in it
(:mod:`lmcourse.marking`), and the rules refuse third-party equivalents while a graded call runs;
what remains is code that reaches for what a graded kernel should not use: the course's
reference read as text (``open`` / ``inspect.getsource`` and ``exec``; without bubblewrap the
files are readable), the test machinery (``tests`` rebound or its objects written, a record written
by hand), the interpreter's hooks and frames, the kernel's own history and hooks, other processes,
code loaded from files, paths outside the submission, or a third-party equivalent called from
compiled code the rules cannot see.

The scan reads every cell the student could have written (answers, cells the student added, cells
given nbgrader metadata of their own, raw cells), as IPython runs them: magics, shell escapes and
help syntax are turned into Python by IPython's own transformer first, and a cell that still does
not parse is itself a finding. It never runs them, and flags ``source-scan`` with what it found.
A flag asks a person to look; it changes no score (a false alarm costs a TA a minute, not a
student points).
"""

from __future__ import annotations

import ast
import base64
import binascii
import functools
import importlib.util
import re
import sys
import threading
from dataclasses import dataclass, field

__all__ = ["FLAG", "scan_cells", "scan_source"]

# `lmcourse grade -j N` scans submissions in N threads at once, and CPython 3.11's ast module keeps one
# recursion-depth count per interpreter: two parses at once can fail with "SystemError: AST constructor
# recursion depth mismatch" (python/cpython#106905), which crashed a submission's grading. One parse at a
# time (a cell parses in microseconds), and a parse that met one outside the scan is tried again.
_PARSING = threading.Lock()

FLAG = "source-scan"

# ---------------------------------------------------------------------------------------------------
# The table of findings. Each finding is a short line naming what was seen: a label from below and the
# code, name or text that matched ("a process: subprocess.run", "outside the submission: '../..'").
# ---------------------------------------------------------------------------------------------------

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
          # a frame reached from a traceback, a generator or a coroutine
          "tb_frame", "gi_frame", "cr_frame", "ag_frame",
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

PROCESS = "a process"
LOADING = "code loading"
MACHINERY = "test machinery"
CELLS = "cells read or hooked"
OUTSIDE = "outside the submission"
SHELL = "shell"
MAGIC = "magic"
UNPARSED = "does not parse"
NO_GRADE_ID = "nbgrader metadata without a grade_id"
TWO_WAYS = "read one way by Python and run another by IPython"
COMPUTED = "a name built at run time"
OFF_LIST = "beyond the course's list"
FOREIGN = "lmcourse_student_nbgrader"     # nbgrader_execute.ForeignMetadata's key (that module imports nbgrader)

# dotted names, read after the notebook's imports are resolved (``import subprocess as sp; sp.run`` is
# subprocess.run, ``from os import fork`` is os.fork): a pattern names a module or object and all
# inside it, or, ending in ``*``, every name that starts so
_DOTTED = (
    (PROCESS, ("subprocess", "multiprocessing", "pty", "pexpect", "daemon", "torch.multiprocessing",
               "os.fork", "os.forkpty", "os.spawn*", "os.exec*", "os.posix_spawn*", "os.system", "os.popen",
               "os.setsid", "os.setpgrp", "os.daemon", "asyncio.create_subprocess_*",
               "concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process",
               # a sub-interpreter has audit hooks of its own: what it starts is not seen
               "_xxsubinterpreters", "_interpreters", "_xxinterpchannels", "_interpchannels", "interpreters",
               "concurrent.interpreters", "test.support.interpreters")),
    (LOADING, ("imp", "runpy", "py_compile", "compileall", "importlib.util", "importlib.machinery",
               "importlib.import_module", "importlib.reload", "importlib.resources", "site.addsitedir",
               # text or bytes run as code without exec: a pickle's reduce, a timed statement, a shelf
               "pickle", "_pickle", "cPickle", "dill", "cloudpickle", "shelve", "copyreg", "timeit", "code",
               "codeop", "doctest", "cProfile", "profile", "pdb", "bdb", "trace", "joblib", "pydoc",
               "typing.get_type_hints", "typing.evaluate_forward_ref")),
    (MACHINERY, ("lmcourse.marking", "lmcourse.grading", "lmcourse.reference", "gc.get_objects", "gc.get_referrers",
                 "gc.get_referents")),
    (OUTSIDE, ("site", "sysconfig", "os.chdir", "os.fchdir")),
)
# the objects of the course's test machinery: what a write on them is a finding for
_MACHINERY = ("lmcourse.marking", "lmcourse.grading")

# names, as a variable, an attribute or an imported name, whatever they are read from
_NAMED = {
    # a module made from a file, not an import the kernel's refusals see
    LOADING: ("load_source", "load_compiled", "load_dynamic", "load_package", "load_module",
              "spec_from_file_location", "spec_from_loader", "module_from_spec", "exec_module",
              "SourceFileLoader", "SourcelessFileLoader", "ExtensionFileLoader", "addsitedir"),
    # the kernel's record of executed cells, and the hooks that see or rewrite each cell
    CELLS: ("history_manager", "input_transformers_cleanup", "input_transformers_post",
            "input_transformer_manager", "input_splitter", "ast_transformers", "displayhook", "display_pub",
            "user_ns", "user_global_ns", "user_ns_hidden", "set_custom_exc", "register_magic_function",
            "register_magics", "run_cell", "run_cell_async", "run_ast_nodes", "run_code", "safe_execfile",
            "safe_execfile_ipy", "safe_run_module", "automagic"),
    # where the course's package (and its reference) lies on disk
    OUTSIDE: ("__file__", "__path__", "__spec__"),
}
# IPython's names for the executed cells' text (In, _ih, _i3) and outputs (Out, _oh)
_HISTORY = re.compile(r"^(In|Out|_ih|_oh|_dh|_ii|_iii|_i\d+)$")
# the shell's own methods that run a command or code (get_ipython().system("..."), ip.ex("..."))
_SHELL_RUNS = ("system", "system_piped", "system_raw", "getoutput")
_SHELL_HOOKS = ("ex", "ev", "kernel", "events", "push", "magic", "define_macro")
# keywords that start a process apart from the kernel's group
_DETACHING = ("start_new_session", "process_group", "preexec_fn")
_DETACHED_TEXT = re.compile(r"\b(nohup|setsid|disown)\b")

# IPython magics: those that only time, capture or show Python (their text is read as a cell's),
# those that only display, and those that only set the kernel's display; every other one is a finding
_PYTHON_MAGICS = ("time", "timeit", "capture", "prun")
_HARMLESS_MAGICS = ("matplotlib", "config", "xmode", "precision", "who", "whos", "who_ls", "lsmagic", "magic",
                    "quickref", "pinfo", "pdoc", "psearch", "colors", "pprint", "autoreload", "env", "pwd",
                    "html", "markdown", "latex", "svg")
_SHELL_MAGICS = ("bash", "sh", "script", "system", "sx", "sc", "pip", "conda", "mamba", "perl", "ruby",
                 "python", "python2", "python3", "pypy")
# an extension a notebook may load: IPython's own reloader
_EXTENSIONS = ("autoreload",)

# texts in strings that name the grader's or the course's files
_PLACES = ("gradebook", "submitted", "autograded", "source/", "release/", "templates", "nbgrader", ".ipynb")
# a word of a string that is a path leaving the submission's folder: absolute, a home, a drive, or ..
# (a first part of digits only is a fraction in a progress line, "step {i}/100", not a path)
_CLIMB = re.compile(r"^/(?=[\w.~-]*[^\W\d])[\w.~-]+(/[\w.~*-]*)*$|^~[/\\]|^[A-Za-z]:[/\\]|(^|[/\\])\.\.([/\\]|$)")
# a file that holds code: written and imported, or loaded
_CODE_FILE = re.compile(r"\.(py|pyc|pyw|pyd|pth|so)$")
_WORDS = re.compile(r"[\s;|&()'\"=,]+")
_READS = ("read", "read_text", "read_bytes", "getsource", "open")

_SHOWN = 60


# ---------------------------------------------------------------------------------------------------
# Reading a cell
# ---------------------------------------------------------------------------------------------------

def _parse(source: str) -> ast.Module:
    with _PARSING:
        try:
            return ast.parse(source)
        except SystemError as e:    # a parse elsewhere in the process (a traceback's) overlapped: once more
            if "recursion depth mismatch" not in str(e):
                raise
            return ast.parse(source)


def _as_ipython_runs_it(source: str) -> str:
    """The Python IPython runs for a cell: magics, ``!cmd`` and ``x?`` made into calls on the shell
    (``get_ipython().run_line_magic('run', 'x.py')``), prompts and common indentation removed."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:         # a grader without IPython reads the cell as plain Python
        return source
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 (the transformer's own errors: the cell is read as written)
        return source


def _read(source: str) -> tuple[ast.Module | None, str]:
    """The syntax tree of what IPython runs for the cell, or None and why it does not parse; the reason
    is also set when the cell parses as Python but IPython runs something else (its prompt stripping reads
    ``>>>`` and ``...`` by pattern: ``... % run(x)`` is Python, and IPython runs ``%run (x)``). The scan
    reads what runs, and a cell read two ways is a finding itself."""
    ran = _as_ipython_runs_it(source)
    try:
        tree = _parse(ran)
    except SyntaxError as e:
        return None, f"{e.msg} (line {e.lineno})"
    except ValueError as e:     # a null byte
        return None, str(e)
    if ran.strip() != source.strip():
        try:
            _parse(source)
        except (SyntaxError, ValueError):
            return tree, ""         # magics, shell escapes, prompts: not Python, read as IPython runs them
        return tree, f"{TWO_WAYS}: {_shown(source.strip().splitlines()[0] if source.strip() else '')}"
    return tree, ""


def _nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of a cell's tree, listed once for the several readings of it."""
    nodes = getattr(tree, "_scan_nodes", None)
    if nodes is None:
        nodes = tree._scan_nodes = list(ast.walk(tree))
    return nodes


def _shown(node: ast.AST | str) -> str:
    text = node if isinstance(node, str) else ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


# ---------------------------------------------------------------------------------------------------
# What the notebook's cells together say about names
# ---------------------------------------------------------------------------------------------------

@dataclass
class Names:
    """Names bound anywhere in the notebook, the course's cells included (the setup cell's imports
    and ``tests`` are the student's to use in any cell)."""
    modules: dict[str, str] = field(default_factory=dict)      # name -> the dotted name it was imported as
    machinery: set[str] = field(default_factory=lambda: {"tests"})  # names bound to the test machinery
    shells: set[str] = field(default_factory=set)              # names bound to get_ipython()
    sys_names: set[str] = field(default_factory=lambda: {"sys"})  # the names sys goes by (import sys as _s)
    built: set[str] = field(default_factory=set)               # names bound to strings built in place
    own_private: set[str] = field(default_factory=set)         # _names the notebook's own code defines
    written: set[str] = field(default_factory=set)             # names bound only to names written out

    def learn(self, tree: ast.Module) -> None:
        for node in _nodes(tree):
            if isinstance(node, ast.Assign) and _built_string(node.value):
                self.built.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                # LORA_TARGETS = ("c_attn", "c_proj"): a loop over it names what it sets (rebound otherwise: not)
                (self.written.add if _written_names(node.value) else self.written.discard)(node.targets[0].id)
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                    if a.name == "sys":
                        self.sys_names.add(a.asname or "sys")
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.modules[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                # a module or a name of one held in a variable (T = torch; o = T.optim) is read as what it holds
                value = node.value
                alias = self.dotted(value) if isinstance(value, ast.Attribute) else (
                    self.modules.get(value.id) if isinstance(value, ast.Name) else None)
                if alias:
                    self.modules[node.targets[0].id] = alias
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
                self.own_private.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                self.own_private.update(n.name for n in node.body if isinstance(
                    n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name.startswith("_"))
                self.own_private.update(t.id for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                                        if isinstance(t, ast.Name) and t.id.startswith("_"))

    def follow(self, trees: list[ast.Module]) -> None:
        """Names bound to the test machinery or the shell, followed through assignments and loops
        (``ex = tests.exam.exercises[0]``, ``for ex in lmcourse.marking.ngram.EXERCISES``)."""
        for n in self.modules:
            if _within(self.modules[n], _MACHINERY):
                self.machinery.add(n)
        for _ in range(4):          # a chain of assignments across cells, followed a few links deep
            before = len(self.machinery) + len(self.shells)
            for tree in trees:
                for node in _nodes(tree):
                    for target, value in _bindings(node):
                        names = {t.id for t in ast.walk(target) if isinstance(t, ast.Name)}
                        if self.reaches_machinery(value):
                            self.machinery |= names
                        if _is_shell(value, self):
                            self.shells |= names
            if len(self.machinery) + len(self.shells) == before:
                break

    def dotted(self, node: ast.expr) -> str | None:
        """``a.b.c`` with ``a`` read as the module it was imported as; None when ``a`` is not one."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.modules:
            return None
        return ".".join([self.modules[node.id], *reversed(parts)])

    def reaches_machinery(self, node: ast.AST) -> bool:
        """Whether an expression is an object of the test machinery or one got from it (an attribute,
        an item, a method's result, ``type(tests)``, ``sys.modules[...]``); a value merely computed
        from one (``len(tests.exam.exercises)``) is not."""
        while True:
            if isinstance(node, ast.Name):
                return node.id in self.machinery
            if isinstance(node, (ast.Tuple, ast.List)):
                return any(self.reaches_machinery(e) for e in node.elts)
            if isinstance(node, ast.Attribute) and _within(self.dotted(node) or "", (*_MACHINERY, "sys.modules")):
                return True
            if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id not in _PASSING or not node.args:
                    return False
                node = node.args[0]
            elif isinstance(node, ast.Call):
                node = node.func            # a method's result: tests.exam.get("x")
            else:
                return False


# builtins whose result is their first argument, a part of it or its class
_PASSING = ("type", "getattr", "vars", "next", "iter", "list", "tuple", "reversed", "sorted", "enumerate", "dict",
            "zip", "super")


def _bindings(node: ast.AST):
    """(target, value) pairs a statement binds."""
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [(node.target, node.iter)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars is not None]
    return []


def _within(name: str, patterns: tuple[str, ...]) -> bool:
    for p in patterns:
        if (name.startswith(p[:-1]) if p.endswith("*") else name == p or name.startswith(p + ".")):
            return True
    return False


def _is_shell(node: ast.AST, names: Names) -> bool:
    """``get_ipython()`` (or IPython.get_ipython()), or a name bound to it."""
    if isinstance(node, ast.Name):
        return node.id in names.shells
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "get_ipython")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "get_ipython"))


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


# ---------------------------------------------------------------------------------------------------
# The findings, one small function each: node -> findings
# ---------------------------------------------------------------------------------------------------

def _hidden_name(node: ast.expr) -> bool:
    """An attribute name built in place ("__co" + "de__", an f-string, a join), or a dunder / one of
    :data:`_NAMES` written as a string; a plain variable is ordinary code (``getattr(row, column)``)."""
    if isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Call)):
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Constant):     # 'xamtfos'[::-1]
        return True
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
        node.value in _NAMES or node.value.startswith("__"))


def _built_string(node: ast.expr) -> bool:
    """A string put together in place: ``''.join([...])``, ``"a" + "b"``, an f-string, ``bytes.fromhex(h).decode()``,
    ``chr(...)``. Held in a variable and given to getattr / setattr it names an attribute no text shows."""
    if isinstance(node, ast.JoinedStr) or isinstance(node, ast.Subscript) and isinstance(node.value, ast.Constant):
        return True
    if isinstance(node, ast.BinOp) and any(isinstance(side, (ast.Constant, ast.JoinedStr)) and isinstance(
            getattr(side, "value", ""), str) for side in (node.left, node.right)):
        return True
    return isinstance(node, ast.Call) and (
        isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "format", "decode", "replace")
        or isinstance(node.func, ast.Name) and node.func.id in ("chr", "str", "bytes"))


def _dotted_builtins(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("builtins", "__builtins__")


def _label(dotted: str) -> str | None:
    return next((label for label, patterns in _DOTTED if _within(dotted, patterns)), None)


def _imports_and_dotted_names(node, names: Names, inner: set[int]):
    """A module or object of :data:`_DOTTED`, imported or used (``os.fork()``, ``sp.Popen``)."""
    if isinstance(node, ast.Import):
        dotted = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        dotted = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    elif isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
        dotted = [names.dotted(node)] if names.dotted(node) else []
    else:
        return
    for d in dotted:
        label = _label(d)
        if label:
            yield f"{label}: {d}"


def _named(node, names: Names, inner: set[int]):
    """A name of :data:`_NAMED`, and IPython's history (``In``, ``_ih``)."""
    name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
            else None)
    if isinstance(node, ast.ImportFrom):
        for a in node.names:
            yield from (f"{label}: {a.name}" for label, table in _NAMED.items() if a.name in table)
        return
    if name is None:
        return
    for label, table in _NAMED.items():
        if name in table:
            yield f"{label}: {name}"
    if isinstance(node, ast.Name) and _HISTORY.match(name):
        yield f"{CELLS}: {name}"
    if isinstance(node, ast.Attribute) and node.attr == "register" and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "events":
        yield f"{CELLS}: {_shown(node)}"


def _shell(node, names: Names, inner: set[int]):
    """The shell's methods that run a command, code or a magic (what ``!cmd`` and ``%magic`` become)."""
    if not (isinstance(node, ast.Attribute) and _is_shell(node.value, names)):
        return
    if node.attr in _SHELL_RUNS:
        yield f"{SHELL}: {node.attr}"
    elif node.attr in _SHELL_HOOKS:
        yield f"{CELLS}: get_ipython().{node.attr}"


def _magic(node, names: Names, inner: set[int]):
    """A magic, by its name: a shell, another language, a file run or loaded, or one the table does not
    know is a finding; the Python inside %time, %%capture and the like is read as a cell is."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("run_line_magic", "run_cell_magic")):
        return
    args = [_text(a) for a in node.args]
    cell = node.func.attr == "run_cell_magic"
    sign = "%%" if cell else "%"
    if not args or args[0] is None:
        yield f"{MAGIC}: {_shown(node)}"           # a magic chosen by a name computed in the code
        return
    name, line = args[0], (args[1] if len(args) > 1 else "") or ""
    shown = _shown(f"{sign}{name} {line}".strip())
    if name in _PYTHON_MAGICS:
        body = args[2] if cell and len(args) > 2 else line
        yield from scan_source(body or "", names)
    elif name == "load_ext" and line.strip() in _EXTENSIONS:
        return
    elif name in _SHELL_MAGICS:
        yield f"{SHELL}: {shown}"
    elif name not in _HARMLESS_MAGICS:
        yield f"{MAGIC}: {shown}"
    if name in ("pinfo", "pdoc", "psearch"):
        yield from scan_source(line, names)      # the object asked about: lmcourse.reference.ngram?


def _strings(node, names: Names, docstrings: set[int]):
    """Texts that name the reference, the grader's files, a path outside the submission, a code file,
    or a detached process in shell text (``nohup``, ``setsid``, ``disown``)."""
    text = _text(node)
    if text is None:
        return
    hit = next((t for t in _TEXTS if t in text), None)
    if hit:
        yield f"the text {hit!r}"
    if id(node) in docstrings:
        return
    lowered = text.lower()
    place = next((p for p in _PLACES if p in lowered), None)
    if place:
        yield f"{OUTSIDE}: the text {place!r}"
    for word in _WORDS.split(text):
        word = word.lstrip("<>")            # a shell's redirection (>/tmp/x), not an HTML tag's </b>
        if _CLIMB.search(word):
            yield f"{OUTSIDE}: {_shown(repr(word))}"
        elif _CODE_FILE.search(word):
            yield f"{LOADING}: a code file {_shown(repr(word))}"
    detached = _DETACHED_TEXT.search(text)
    if detached:
        yield f"{PROCESS}: {detached.group(1)!r} in shell text"


def _detaching_keyword(node, names: Names, inner: set[int]):
    if isinstance(node, ast.keyword) and node.arg in _DETACHING:
        yield f"{PROCESS}: {node.arg}="


# keywords that let a loader run a pickle's code: numpy.load(..., allow_pickle=True),
# torch.load(..., weights_only=False)
_UNPICKLING = {"allow_pickle": True, "weights_only": False}
# a pickle module of one's own given to torch.load turns its weights_only check off
_UNPICKLING_ALWAYS = ("pickle_module",)


# loaders whose third argument or ** can turn unpickling of code on
_LOADERS = ("numpy.load", "torch.load", "torch.serialization.load")


def _unpickling_keyword(node, names: Names, inner: set[int]):
    if isinstance(node, ast.keyword) and (node.arg in _UNPICKLING_ALWAYS or node.arg in _UNPICKLING and not (
            isinstance(node.value, ast.Constant) and node.value.value is not _UNPICKLING[node.arg])):
        yield f"{LOADING}: {node.arg}={_shown(node.value)}"
    elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and (
            names.dotted(node.func) if isinstance(node.func, ast.Attribute) else names.modules.get(
                node.func.id)) in _LOADERS and (len(node.args) >= 3 or any(k.arg is None for k in node.keywords)):
        # np.load(f, None, True); torch.load(f, None, pickle_module) or **{"weights_only": False}
        yield f"{LOADING}: {_shown(node)} (unpickling by position or by **)"
    elif _environ_written(node, names):
        # TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 and its kind turn a safe load into an unpickling one
        yield f"{LOADING}: {_shown(node)} (the environment written)"


def _environ_written(node: ast.AST, names: Names) -> bool:
    """``os.environ[k] = v``, ``os.environ.update(...)`` / ``setdefault``, ``os.putenv``: what a library reads
    from the environment changes how it behaves from then on."""
    def environ(n: ast.AST) -> bool:
        return isinstance(n, ast.Attribute) and names.dotted(n) == "os.environ"

    def risky(key: ast.AST | None) -> bool:
        # a key written out that no loader or grader reads (TOKENIZERS_PARALLELISM) is a setting, not a route
        text = _text(key) if key is not None else None
        return text is None or text.upper().startswith(_ENVIRON_READ) and text.upper() not in _ENVIRON_SETTINGS
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Subscript) and environ(t.value) and risky(t.slice) for t in targets)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if environ(node.func.value) and node.func.attr in ("setdefault", "__setitem__"):
            return risky(node.args[0] if node.args else None)
        return (environ(node.func.value) and node.func.attr == "update"
                or names.dotted(node.func) in ("os.putenv", "os.environ.update"))
    return False


# environment variables that change how torch loads files or how the course runs and grades
_ENVIRON_READ = ("TORCH", "PYTORCH", "LMCOURSE", "NBGRADER", "PYTHON", "JUPYTER", "IPY", "LD_", "PATH")
# settings among them that change where a cache lies or how memory is handed out, not what is loaded or run
_ENVIRON_SETTINGS = ("TORCH_HOME", "PYTHONHASHSEED", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ENABLE_MPS_FALLBACK")


def _builtin_by_computed_name(node, names: Names, inner: set[int]):
    """``getattr(builtins, name)`` with a name that is not written out: any builtin, exec included, with
    nothing in the cell naming it (the builtins module under any alias, or ``__builtins__``)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "vars")
            and node.args):
        return
    target = node.args[0]
    if not (_dotted_builtins(target) or names.dotted(target) == "builtins"):
        return
    if node.func.id == "vars" or len(node.args) < 2 or not isinstance(node.args[1], ast.Constant):
        yield f"{LOADING}: {_shown(node)}"


def _held_setter(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in ("__setattr__", "__delattr__")


def _computed_name(node, names: Names, inner: set[int]):
    """What reaches an object by a name the cell builds as it runs, or holds the setter that writes any
    attribute: ``globals()[name]`` with ``name`` not written out, ``s = object.__setattr__`` (the setter kept
    or passed, not called where it is named), and the builtins module reached through a builtin function
    (``print.__self__``). The test machinery's objects are found this way by code that hides it."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and isinstance(
            node.value.func, ast.Name) and node.value.func.id in ("globals", "locals", "vars") and not isinstance(
            node.slice, ast.Constant):
        yield f"{COMPUTED}: {_shown(node)}"
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and _held_setter(node.value):
        yield f"{COMPUTED}: {_shown(node.value)}"
    elif isinstance(node, ast.Call) and any(_held_setter(a) for a in [*node.args, *(k.value for k in node.keywords)]):
        passed = next(a for a in [*node.args, *(k.value for k in node.keywords)] if _held_setter(a))
        yield f"{COMPUTED}: {_shown(passed)}"
    elif isinstance(node, ast.Attribute) and node.attr == "__self__":
        yield f"{COMPUTED}: {_shown(node)}"


def _file_run_as_code(node, names: Names, inner: set[int]):
    """exec / eval / compile / run_cell of a file's or an object's text (``exec(open(p).read())``)."""
    if not (isinstance(node, ast.Call) and node.args):
        return
    func = node.func.id if isinstance(node.func, ast.Name) else (
        node.func.attr if isinstance(node.func, ast.Attribute) else None)
    if func not in (*_BUILTINS, "run_cell", "run_code"):
        return
    read = any(isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Attribute) and n.func.attr in _READS)
        or (isinstance(n.func, ast.Name) and n.func.id in _READS)) for n in ast.walk(node.args[0]))
    if read:
        yield f"{LOADING}: {_shown(node)}"


def _machinery_write(node, names: Names, inner: set[int]):
    """A write on an object of the course's test machinery (``ex.rules = None``,
    ``object.__setattr__(exercise, "rules", None)``, ``vars(tests)[k] = v``, ``Exam.grade = f``);
    and a ``.rules`` set on anything."""
    targets = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    for t in targets:
        for part in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
            if isinstance(part, ast.Attribute) and (part.attr == "rules" or names.reaches_machinery(part.value)):
                yield f"{MACHINERY}: {_shown(part)} written"
            elif isinstance(part, ast.Subscript) and (_namespace_of(part.value, names)
                                                      or names.reaches_machinery(part.value)):
                yield f"{MACHINERY}: {_shown(part)} written"
    if not isinstance(node, ast.Call):
        return
    f = node.func
    if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and len(node.args) >= 2 and (
            names.reaches_machinery(node.args[0]) or _text(node.args[1]) == "rules"):
        yield f"{MACHINERY}: {_shown(node)}"
    elif isinstance(f, ast.Attribute) and f.attr in ("__setattr__", "__delattr__") and node.args and (
            names.reaches_machinery(f.value) or names.reaches_machinery(node.args[0]) or (
                isinstance(f.value, ast.Name) and f.value.id in ("object", "type")
                and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls")))):
        # object.__setattr__(self, ...) is a frozen dataclass's own __init__; on anything else it
        # writes past the object's own rules
        yield f"{MACHINERY}: {_shown(node)}"
    elif isinstance(f, ast.Attribute) and f.attr in ("update", "setdefault", "__setitem__", "pop", "clear") \
            and _namespace_of(f.value, names):
        yield f"{MACHINERY}: {_shown(node)}"


def _namespace_of(node: ast.AST, names: Names) -> bool:
    """``vars(x)`` or ``x.__dict__`` of an object of the test machinery."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and node.args:
        return names.reaches_machinery(node.args[0])
    return isinstance(node, ast.Attribute) and node.attr == "__dict__" and names.reaches_machinery(node.value)


def _legacy(node, names: Names, inner: set[int], keys: set[int]):
    """The reference, the interpreter's hooks and frames, the test object: the scan's first findings."""
    sys_names = names.sys_names
    if isinstance(node, ast.Import):
        for alias in node.names:
            if _within(alias.name, _MODULES):
                yield f"import {alias.name}"
    elif isinstance(node, ast.ImportFrom) and node.module and _within(node.module, _MODULES):
        yield f"from {node.module} import"
    elif isinstance(node, ast.ImportFrom) and any(a.name in _NAMES for a in node.names):
        # imported under another name (from torch.overrides import TorchFunctionMode as M)
        yield next(a.name for a in node.names if a.name in _NAMES)
    elif isinstance(node, ast.Name) and node.id in _NAMES:
        yield node.id
    elif _sys_path(node, sys_names):
        # the reference's folder put on the path imports its modules under their bare names
        # (``import ngram``), which the graded kernel's refusal of lmcourse.reference.* does not see
        yield "sys.path"
    elif isinstance(node, ast.Attribute) and node.attr in _NAMES and (
            node.attr not in _BUILTINS or _dotted_builtins(node.value)):
        yield node.attr
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        if (node.value in _NAMES and node.value not in _BUILTINS) or (id(node) in keys and _within(
                node.value, _MODULES)):
            # a flagged name written as a string: vars(sys)["setprofile"], sys.modules["importlib"]
            # (a module's name only as a key: a folder may share it, data_dir() / "tokenizers")
            yield f"the text {node.value!r}"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
            and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in (*_NAMESPACES, *sys_names):
        yield f"vars({node.args[0].id})"
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
            node.attr == "__dict__" and node.value.id in (*_NAMESPACES, *sys_names)):
        yield f"{node.value.id}.__dict__"
    elif isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "sys":
        yield "sys.modules"             # through another module's sys (os.sys.modules)
    elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
            isinstance(t, ast.Attribute) and (t.attr.startswith("__") and t.attr.endswith("__") or isinstance(
                t.value, ast.Name) and t.value.id in ("builtins", "__builtins__"))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
        # a class's own machinery rewritten (X.__enter__ = ...), or a name put among the builtins, where every
        # cell finds it without a cell binding it
        yield "a special attribute or a builtin written"
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in sys_names \
            and node.attr == "modules":
        # every loaded module, the course's marking code among them (reached without naming it:
        # sys.modules[type(tests).__module__])
        yield "sys.modules"
    elif isinstance(node, ast.Name) and node.id == "tests" and isinstance(node.ctx, ast.Load):
        # the test cells' object: nothing a student writes reads it
        yield "tests read"
    elif isinstance(node, ast.keyword) and node.arg and node.arg.startswith("co_"):
        yield "a code object rebuilt (co_ fields)"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRS \
            and len(node.args) >= 2 and (_hidden_name(node.args[1]) or (
                isinstance(node.args[1], ast.Name) and node.args[1].id in names.built
                and not getattr(node, "_scan_constant_name", False))):
        # getattr(f, "__co" + "de__") names a hooked attribute without writing it; so does a variable that holds
        # such a string, built in another statement (n = ''.join(['__s', 'etattr__']); getattr(object, n))
        yield f"{node.func.id} with a computed or hidden name"
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "tests" for t in targets):
            yield "tests rebound"
    elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == "tests":
        yield "tests rebound"
    elif isinstance(node, ast.FunctionDef) and node.name in _NAMES:
        yield node.name             # a mode's or a tensor subclass's own __torch_function__


# ---------------------------------------------------------------------------------------------------
# The course's list: what an answer may use at all. Everything above names a known route; what follows
# flags anything outside a short list, so a route nobody has thought of yet needs a module, a special
# attribute or a private name a valid answer has no use for, and a person looks at it. Checked on every
# solution and every alternative of the catalogues: none of them goes beyond it.
# ---------------------------------------------------------------------------------------------------

# modules an answer may import (top-level packages); lmcourse's graded parts are refused above
_LISTED_MODULES = frozenset((
    "torch", "numpy", "math", "cmath", "random", "statistics", "fractions", "decimal", "collections", "itertools",
    "functools", "operator", "heapq", "bisect", "array", "copy", "dataclasses", "typing", "enum", "abc",
    "contextlib", "re", "regex", "string", "textwrap", "unicodedata", "codecs", "json", "csv", "time", "datetime",
    "pathlib", "glob", "tempfile", "logging", "warnings", "pprint", "platform", "matplotlib", "mpl_toolkits",
    "pandas", "tqdm", "numbers", "cycler",
    "lmcourse", "__future__"))
# modules an answer may import for a few harmless names only (a path joined, the output flushed, memory
# collected before a GPU cache is emptied); any other name of theirs reaches the interpreter or the system
_PARTLY_LISTED = {"os": ("path", "getcwd", "getpid", "cpu_count", "environ", "getenv", "sep", "linesep", "listdir",
                         "makedirs", "fspath", "PathLike"),
                  "sys": ("stdout", "stderr", "version", "version_info", "platform", "maxsize", "float_info",
                          "getsizeof", "exit", "argv"),
                  "gc": ("collect",),
                  "IPython.display": ("display", "Markdown", "HTML", "Image", "clear_output"),
                  # the test helpers' assertions; the rest of them runs doctests and strings (numpy's measure)
                  "numpy.testing": ("assert_*",),
                  "torch.testing": ("assert_close", "assert_allclose", "make_tensor"),
                  # torch.save and torch.load live here; its safe-globals lists let a weights-only load call code
                  "torch.serialization": ("load", "save"),
                  "types": ("SimpleNamespace",)}
# the submodules of the large listed libraries an answer may reach (a name and all inside it); their other
# submodules hold servers, compilers, profilers, string runners and process pools an answer has no use for
# (torch.utils.benchmark runs a string, numpy.f2py compiles, tqdm.contrib.concurrent starts processes). A
# function or class of the library's top level (torch.softmax, np.load) is not a submodule and stays listed.
_LISTED_SUBMODULES = {
    "torch": ("nn", "optim", "utils.data", "utils.checkpoint", "utils.flop_counter", "linalg", "special", "fft",
              "autograd", "cuda",
              "backends", "amp", "testing", "distributions", "func", "random", "mps", "cpu", "types", "version",
              "return_types", "functional", "storage", "profiler", "masked", "utils.dlpack", "signal"),
    "numpy": ("random", "linalg", "fft", "ma", "polynomial", "typing", "testing", "char", "strings", "exceptions",
              "dtypes", "version", "lib.stride_tricks", "lib.scimath", "rec"),
    "matplotlib": ("pyplot", "colors", "cm", "ticker", "patches", "lines", "gridspec", "figure", "axes",
                   "collections", "colorbar", "patheffects", "markers", "text", "transforms", "scale",
                   "font_manager", "style", "legend", "image", "dates", "animation", "artist", "widgets", "colorizer",
                   "projections", "layout_engine", "rcsetup"),
    "tqdm": ("auto", "autonotebook", "notebook", "std", "tqdm", "asyncio", "version"),
}
# public parts of the listed libraries that write or swap the library's own machinery
_UNLISTED_PARTS = ("operator.attrgetter", "operator.methodcaller",
                   "torch.ops", "torch.library", "torch.overrides", "torch.jit", "torch.fx", "torch.export",
                   "torch.compiler", "torch.utils.cpp_extension", "torch.utils.hooks", "numpy.ctypeslib",
                   # what turns a string into an object (a dotted path walked, a type hint evaluated, a backend
                   # imported by name) or unpickles one: any name, no text naming it (torch.load and np.load
                   # unpickle only when told to: _unpickling_keyword)
                   "logging.config", "logging.handlers", "string.Formatter", "typing.get_type_hints",
                   "typing.ForwardRef", "matplotlib.use", "matplotlib.backends", "matplotlib.pyplot.switch_backend",
                   "torch.hub", "torch.package",
                   "torch.utils.model_zoo", "pandas.read_pickle", "pandas.eval", "pandas.io",
                   # what runs a string as code (a benchmark's statement, a file's doctests)
                   "torch.utils.benchmark",
                   # what unpickles on request (a datapipe's "pickle" handler)
                   "torch.utils.data.datapipes",
                   # what evaluates annotations that may be strings of code held in variables
                   "functools.singledispatch", "functools.singledispatchmethod")
# special attributes of the data model an answer may read or call (x.__getitem__ as a sort key,
# super().__init__()); every other one reaches an object's machinery (__class__, __dict__, __globals__ ...)
_LISTED_SPECIAL = frozenset((
    "__init__", "__name__", "__qualname__", "__doc__", "__version__", "__len__", "__getitem__", "__contains__",
    "__iter__", "__next__", "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
    "__matmul__", "__neg__", "__abs__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
    "__repr__", "__str__", "__bool__", "__float__", "__int__", "__index__", "__call__"))
# special names a cell may write or read as a bare name (a class's __slots__, `if __name__ == ...`)
_LISTED_SPECIAL_NAMES = frozenset(("__name__", "__slots__", "__all__", "__doc__", "__debug__", *_LISTED_SPECIAL))
# special methods whose definition changes how Python finds or checks things, not what a value is
_UNLISTED_DEFINITIONS = ("__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__instancecheck__",
                         "__subclasscheck__", "__init_subclass__", "__class_getitem__", "__set_name__", "__get__",
                         "__set__", "__delete__", "__del__", "__reduce__", "__reduce_ex__", "__class__",
                         "__prepare__", "__mro_entries__")
# builtins that look a name up or reach a namespace: passed as a value (reduce(getattr, path, module)) they
# walk a dotted path no text shows
_LOOKUP_BUILTINS = ("getattr", "setattr", "delattr", "hasattr", "vars", "globals", "locals")
# the method in which a frozen dataclass sets its own fields with object.__setattr__ (an __init__ can be
# called unbound on any object: Exercise.__init__ of a class of one's own, run on the course's exercise)
_OWN_INIT = ("__post_init__",)
# builtins that reach the cell's whole namespace or the debugger (vars of a module or of the tests is
# flagged above; of a student's own object it is ordinary)
_UNLISTED_BUILTINS = ("globals", "locals", "breakpoint")


def _special(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _named_above(name: str) -> bool:
    """A name the routes above already flag by itself (``__file__``, ``__code__``): said once."""
    return name in _NAMES or any(name in table for table in _NAMED.values())


def _dotted_above(dotted: str) -> bool:
    """A module or name the routes above already flag (``import inspect``, ``os.fork``, ``sys.modules``)."""
    last = dotted.rpartition(".")[2]
    return (_within(dotted, _MODULES) or _label(dotted) is not None or _named_above(last)
            or last in ("modules", *_PATHS))


def _module_path(node: ast.expr, names: Names) -> bool:
    """Whether an expression is a module or an object reached through one by name (``torch``, ``F.x``)."""
    return names.dotted(node) is not None


@functools.cache
def _real_path(dotted: str) -> str:
    """A dotted name read through the modules it passes: a listed module's attribute that is another module
    (``torch.importlib``, ``pathlib.os``: the standard library's, imported there) is that module; one that is a
    function or class the list leaves out, imported there by name (``torch.utils.checkpoint.get_type_hints``,
    ``pathlib.attrgetter``), is that function or class at its home."""
    parts = dotted.split(".")
    if parts[0] in _LISTED_SUBMODULES:
        _is_module(f"{parts[0]}.x")             # loads a large listed library to read its names
    here = sys.modules.get(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        if not isinstance(here, type(sys)):
            break
        here = getattr(here, part, None)
        if isinstance(here, type(sys)) and here.__name__ != ".".join(parts[:i]):
            return ".".join([here.__name__, *parts[i:]])
        home = _home(here)
        if home is not None and home != ".".join(parts[:i]) and not _listed(home, follow=False):
            return ".".join([home, *parts[i:]])
    return dotted


def _home(obj: object) -> str | None:
    """Where a function or class is defined, by its public name (``_operator.attrgetter`` is
    ``operator.attrgetter``); None for a value, or for one whose home is private (torch's C functions: an
    implementation detail of a listed name, not a re-export)."""
    if isinstance(obj, type(sys)) or not callable(obj) or isinstance(obj, type) and obj.__module__ == "builtins":
        return None                             # a value, or a builtin type (typing.Text is str)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if type(module) is not str or type(qualname) is not str or "<" in qualname:
        return None
    public = module.removeprefix("_")
    if public != module and getattr(sys.modules.get(public), qualname.partition(".")[0], None) is not None:
        module = public                         # a C accelerator's home: _operator, _functools, _collections
    home = f"{module}.{qualname}"
    return None if _private_path(home) else home


def _listed(dotted: str, follow: bool = True) -> bool:
    """Whether a dotted name (a module, or a name read from one) is on the course's list; ``follow``: read it
    through the modules it passes first (:func:`_real_path`)."""
    for module, listed in _PARTLY_LISTED.items():
        if dotted == module:
            return True
        if dotted.startswith(module + "."):
            name = dotted[len(module) + 1:].split(".")[0]
            return any(name == n or n.endswith("*") and name.startswith(n[:-1]) for n in listed)
    real = _real_path(dotted) if follow else dotted
    if real != dotted:
        return _listed(real, follow=False)       # a home is read as written: homes can name each other
    if _unlisted_submodule(dotted):
        return False
    top = dotted.partition(".")[0]
    return top in _LISTED_MODULES and not _private_path(dotted) and not _within(dotted, _UNLISTED_PARTS)


def _unlisted_submodule(dotted: str) -> bool:
    """Whether a dotted name reaches into a submodule of a large listed library that the list leaves out."""
    top, _, rest = dotted.partition(".")
    return top in _LISTED_SUBMODULES and bool(rest) and _is_module(f"{top}.{rest.partition('.')[0]}") and not any(
        rest == m or rest.startswith(m + ".") for m in _LISTED_SUBMODULES[top])


def _partly_listed(dotted: str) -> bool:
    return any(dotted == m or dotted.startswith(m + ".") for m in _PARTLY_LISTED)


def _beyond_the_list(node, names: Names, inner: set[int]):
    """Modules, special attributes, private names of libraries and builtins an answer has no use for."""
    if isinstance(node, ast.Import):
        for a in node.names:
            if not _listed(a.name) and not _dotted_above(a.name):
                yield f"{OFF_LIST}: import {a.name}"
    elif isinstance(node, ast.ImportFrom):
        module = node.module or ""
        # a module's special names (its __builtins__, its __loader__) are its machinery, imported like any name
        unlisted = [f"{module}.{a.name}" for a in node.names if not _listed(f"{module}.{a.name}")
                    or _special(a.name) and a.name not in ("__version__", "__all__", "__doc__", "__name__")]
        if node.level or (not _listed(module) or unlisted) and not any(map(_dotted_above, [module, *unlisted])):
            yield f"{OFF_LIST}: from {'.' * node.level}{module} import"
    elif isinstance(node, ast.Attribute):
        dotted = names.dotted(node) if id(node) not in inner else None
        if _special(node.attr) and node.attr not in _LISTED_SPECIAL and not _named_above(node.attr) \
                and not getattr(node, "_scan_listed", False):
            yield f"{OFF_LIST}: {_shown(node)}"
        elif dotted is not None and not _listed(dotted) and _partly_listed(dotted) \
                and not _dotted_above(dotted):
            yield f"{OFF_LIST}: {dotted}"
        elif node.attr.startswith("_") and not _special(node.attr) and not _private_path(
                names.dotted(node.value) or "") and (_module_path(node.value, names)
                                                   or names.reaches_machinery(node.value)):
            yield f"{OFF_LIST}: {_shown(node)}"          # a library's private name: torch._C, F._in_projection
        elif node.attr.startswith("_") and not _special(node.attr) and node.attr not in names.own_private \
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            yield f"{OFF_LIST}: {_shown(node)}"          # another object's private name: _kit._notebook
        elif id(node) not in inner and dotted is not None and (
                _within(dotted, _UNLISTED_PARTS) or _unlisted_submodule(dotted)
                or _real_path(dotted) != dotted and not _listed(dotted)   # torch.importlib, pathlib.os.system
                and (dotted.partition(".")[0] in _LISTED_MODULES or _partly_listed(dotted))):
            yield f"{OFF_LIST}: {dotted}"               # torch.utils.benchmark.Timer, np.f2py.compile
    elif isinstance(node, ast.Name) and _special(node.id) and node.id not in _LISTED_SPECIAL_NAMES \
            and not _named_above(node.id):
        yield f"{OFF_LIST}: {node.id}"
    elif isinstance(node, ast.Name) and node.id in _UNLISTED_BUILTINS and isinstance(node.ctx, ast.Load):
        yield f"{OFF_LIST}: {node.id}"
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _UNLISTED_DEFINITIONS:
        yield f"{OFF_LIST}: def {node.name}"
    elif isinstance(node, ast.Call) and any(isinstance(a, ast.Name) and a.id in _LOOKUP_BUILTINS
                                            for a in [*node.args, *(k.value for k in node.keywords)]):
        yield f"{OFF_LIST}: {_shown(node)}"                  # functools.reduce(getattr, [...], lmcourse)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and not getattr(
            node, "_scan_listed", False):
        yield f"{OFF_LIST}: {_shown(node)}"                  # vars() is the cell's namespace; vars(x) writes x
    elif _module_looked_up(node, names):
        yield f"{OFF_LIST}: {_shown(node)}"                  # getattr(lmcourse, "marking"), vars(lmcourse)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in _ATTRS + ("hasattr",) and len(node.args) >= 2 and (
                not isinstance(node.args[1], ast.Constant) and _module_path(node.args[0], names)
                or isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and node.args[1].value.startswith("_")):
            yield f"{OFF_LIST}: {_shown(node)}"          # getattr(torch, name), getattr(x, "_private")
        elif node.func.id == "type" and len(node.args) == 3:
            yield f"{OFF_LIST}: {_shown(node)}"          # a class made at run time


def _module_looked_up(node: ast.AST, names: Names) -> bool:
    """``vars(module)``, or ``getattr(module, "name")`` where ``module.name`` would be a finding."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args
            and node.func.id in ("getattr", "hasattr", "vars") and _module_path(node.args[0], names)):
        return False
    if node.func.id == "vars":
        return True
    name = _text(node.args[1]) if len(node.args) >= 2 else None
    return name is not None and _looked_up(f"{names.dotted(node.args[0])}.{name}")


def _looked_up(dotted: str) -> bool:
    """Whether a name looked up by a string on a module would be a finding written as an attribute."""
    return not _listed(dotted) or _dotted_above(dotted) or _within(dotted, _MACHINERY)


def _methods(tree: ast.Module):
    """(method, the name of its own instance) for each function defined in a class body of the cell."""
    for node in _nodes(tree):
        if isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.args.args:
                    yield method, method.args.args[0].arg


def _mark_listed_specials(tree: ast.Module, names: Names) -> None:
    """What the list allows where it stands: ``object.__setattr__(self, ...)`` in a class's own initialiser
    (a frozen dataclass sets its fields so) and ``vars(self)`` in its methods, on that method's own instance
    (a function's parameter merely named ``self`` is any object); ``x.__class__`` read for its ``__name__``;
    the module of a top-level alias (``T = torch``: followed as what it holds), of a call, of a lookup by a
    written-out name; ``getattr`` / ``setattr`` looping over names written out (``for n in ("a", "b")``)."""
    for method, own in _methods(tree):
        for inner in ast.walk(method):
            if not (isinstance(inner, ast.Call) and inner.args and isinstance(inner.args[0], ast.Name)
                    and inner.args[0].id == own):
                continue
            if isinstance(inner.func, ast.Attribute) and inner.func.attr in ("__setattr__", "__delattr__") and \
                    isinstance(inner.func.value, ast.Name) and inner.func.value.id == "object" and \
                    method.name in _OWN_INIT:
                inner.func._scan_listed = True
            elif isinstance(inner.func, ast.Name) and inner.func.id == "vars":
                inner._scan_listed = True
    aliases = set()
    class_bodies = {id(b) for n in _nodes(tree) if isinstance(n, ast.ClassDef) for b in n.body}
    for node in _nodes(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and id(node) not in class_bodies:
            node.value._scan_module_ok = True
            if isinstance(node.value, ast.IfExp):       # xp = torch if on_gpu else np
                node.value.body._scan_module_ok = node.value.orelse._scan_module_ok = True
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            if any(_is_module((names.dotted(v) if isinstance(v, ast.Attribute) else names.modules.get(
                    getattr(v, "id", ""))) or "") for v in values):
                aliases.add(node.targets[0].id)
    # a name the cell binds to something of its own (`data = bytearray()` in a function) is not the module
    # another cell imported under that name; a top-level alias of a module stays the module
    own = {n.id for n in _nodes(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    own |= {n.arg for n in _nodes(tree) if isinstance(n, ast.arg)}
    own -= aliases
    for node in _nodes(tree):
        if isinstance(node, ast.Name) and node.id in own:
            node._scan_module_ok = True
    for node in _nodes(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("__name__", "__qualname__") and isinstance(
                node.value, ast.Attribute) and node.value.attr == "__class__":
            node.value._scan_listed = True
        elif isinstance(node, ast.Compare):           # xp is torch
            for side in (node.left, *node.comparators):
                side._scan_module_ok = True
        elif isinstance(node, ast.Call):
            node.func._scan_module_ok = True
            if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant):
                node.args[0]._scan_module_ok = True
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) and (
                _written_names(node.iter) or isinstance(node.iter, ast.Name) and node.iter.id in names.written):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in _ATTRS \
                        and len(inner.args) >= 2 and isinstance(inner.args[1], ast.Name) \
                        and inner.args[1].id == node.target.id:
                    inner._scan_constant_name = True


def _written_names(node: ast.AST) -> bool:
    """A tuple or list of names written out (``("c_attn", "c_proj")``), none of them one the scan hides."""
    return isinstance(node, (ast.Tuple, ast.List)) and bool(node.elts) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) and not _hidden_name(e) for e in node.elts)


@functools.cache
def _is_module(dotted: str) -> bool:
    """Whether a dotted name is a module: one already imported here, or found without running a module the
    grader has not imported (a submission's text names it)."""
    if not dotted:
        return False
    if isinstance(sys.modules.get(dotted), type(sys)):
        return True
    root = dotted.partition(".")[0]
    if "." in dotted and root not in sys.modules:
        if root not in _LISTED_SUBMODULES:
            return False
        try:                # a large listed library: loading it to read its submodules runs only its own code
            importlib.import_module(root)
        except ImportError:
            return False
    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _module_as_value(node, names: Names, inner: set[int]):
    """A module handed on as a value (an argument, a default, a class attribute, an item, a loop's target, a
    lambda's result): code that receives it reads the module under a name the cell never shows. A module is
    used by its attributes; a top-level alias (``T = torch``) is followed as the module itself."""
    if not (isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)) or id(node) in inner \
            or getattr(node, "_scan_module_ok", False):
        return
    dotted = names.dotted(node) if isinstance(node, ast.Attribute) else names.modules.get(node.id)
    # the modules whose functions an exercise refuses (torch's, the course's) or that the list leaves out; a
    # random or numpy module handed on (rng=random, xp = np) reaches nothing an exercise refuses
    if dotted and _is_module(dotted) and (dotted.partition(".")[0] in ("torch", "lmcourse") or not _listed(dotted)):
        yield f"{OFF_LIST}: the module {dotted} passed as a value"


# libraries a string may name that this grader does not load (a course's refused equivalents among them)
_LIBRARIES_BY_NAME = ("transformers", "tiktoken", "tokenizers", "peft", "sentencepiece", "datasets", "accelerate",
                      "torchtext", "torchvision", "torchaudio", "nltk", "spacy", "sklearn", "scipy", "jax", "flax",
                      "tensorflow", "keras", "xformers", "flash_attn", "triton", "einops", "safetensors")
# a dotted path written in a string (a lookup by text: "lmcourse.marking.rnn", "tiktoken._educational")
_DOTTED_TEXT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _dotted_text(node, names: Names, docstrings: set[int]):
    """A string that is a dotted path the list would flag written as code: a special attribute
    (``"x.__dict__"``), a library's private part, a module beyond the list or the course's test machinery."""
    text = _text(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
        try:                            # b"\x69\x6d\x70..." is a text too, once decoded
            text = node.value.decode("utf-8")
        except UnicodeDecodeError:
            return
    if text is None or id(node) in docstrings:
        return
    for path in _DOTTED_TEXT.findall(text):
        parts = path.split(".")
        special = [p for p in parts if _special(p) and p not in _LISTED_SPECIAL]
        if special or _names_a_module_part(parts) and (
                _private_path(path) or not _listed(path) or _within(path, _MACHINERY)):
            yield f"{OFF_LIST}: the text {_shown(repr(path))}"
            return
    if _code_in_text(text):
        yield f"{OFF_LIST}: code in a text {_shown(repr(text))}"
    elif _encoded_code(text):
        yield f"{OFF_LIST}: code in an encoded text {_shown(repr(text))}"
    elif "module://" in text:
        yield f"{LOADING}: a module imported by name {_shown(repr(text))}"  # matplotlib's backend by name


def _pieces_of_text(node, names: Names, inner: set[int]):
    """Texts kept in pieces (a list or tuple of strings, strings added up) that together decode to code: short
    pieces pass the length an encoded text needs, joined they do not."""
    if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) >= 16 and all(
            isinstance(e, ast.Constant) and type(e.value) is int and 0 < e.value < 0x110000 for e in node.elts):
        # character codes or bytes (bytes([105, 109, ...]).decode(), "".join(map(chr, ...)))
        if _statements("".join(chr(e.value) for e in node.elts)):
            yield f"{OFF_LIST}: code in a list of character codes {_shown(ast.unparse(node))}"
        return
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        pieces = [_text(e) for e in node.elts]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and not getattr(node, "_scan_piece", False):
        pieces, todo = [], [node]
        while todo:
            part = todo.pop()
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):
                part._scan_piece = part is not node     # read once, as the whole sum (the walk meets it first)
                todo += [part.right, part.left]
            else:
                pieces.append(_text(part))
    else:
        return
    if len(pieces) > 1 and all(p is not None for p in pieces):
        joined = "".join(pieces)
        if _encoded_code(joined):
            yield f"{OFF_LIST}: code in a text kept in pieces {_shown(repr(joined))}"


# an encoded text: hex or base64 without spaces, long enough to hold a statement
_ENCODED = re.compile(r"[0-9A-Za-z+/=_-]{32,}")


def _encoded_code(text: str) -> bool:
    """A text that decodes (hex, base64, base32) to Python that imports or calls: code kept where no reading of
    the cell sees it, for a runner to decode and run. A hash, a token id list or a key does not parse as such."""
    text = "".join(text.split())          # spaces and line breaks between the pieces of one encoding
    if not _ENCODED.fullmatch(text):
        return False
    for decode in (bytes.fromhex, base64.b64decode, base64.urlsafe_b64decode, base64.b32decode):
        try:
            plain = decode(text).decode("utf-8")
        except (ValueError, UnicodeDecodeError, binascii.Error):
            continue
        if _statements(plain):
            return True
    return False


def _statements(plain: str) -> bool:
    """Whether a decoded text is Python that imports, calls, assigns or defines."""
    try:
        tree = ast.parse(plain)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, (ast.Import, ast.ImportFrom, ast.Call, ast.Assign, ast.FunctionDef))
               for n in ast.walk(tree))


def _names_a_module_part(parts: list[str]) -> bool:
    """Whether ``a.b...`` starts with a module and one of its names (``os.walk``, ``tiktoken._educational``),
    not a file name or prose that merely starts with a module's name (``code.txt``, ``token.ids``)."""
    module = sys.modules.get(parts[0])
    if module is not None:
        return hasattr(module, parts[1]) or _is_module(f"{parts[0]}.{parts[1]}")
    return parts[0] in _LIBRARIES_BY_NAME


def _runner_method(node, names: Names, inner: set[int]):
    """``x.exec(text)`` or ``x.eval(text)``: a code runner reached as an attribute of something the scan cannot
    read (a module handed back by a function). ``model.eval()`` takes no argument and is not one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and names.dotted(node.func) is None and (
            node.func.attr == "exec" or node.func.attr == "eval" and (node.args or node.keywords)):
        yield f"{OFF_LIST}: {_shown(node.func)}(...)"


def _annotation_text(node, names: Names, inner: set[int]):
    """A string annotation that is more than a type's name: ``def f(x: "exec(s)")``. Whatever reads the hints
    (functools.singledispatch's register, typing.get_type_hints) evaluates it as code."""
    hints = [a.annotation for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                                    node.args.vararg, node.args.kwarg) if a is not None] + [node.returns] if isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not isinstance(node, ast.Lambda) else (
        [node.annotation] if isinstance(node, ast.AnnAssign) else [])
    for hint in hints:
        text = _text(hint) if hint is not None else None
        if text is not None and not _TYPE_NAME.fullmatch(text.strip()):
            yield f"{OFF_LIST}: an annotation that is code {_shown(repr(text))}"


# a type named in a string annotation: "Tensor", "torch.Tensor", "list[int]", "Optional[GPT]", "int | None"
_TYPE_NAME = re.compile(r"[\w.]+(\[[\w., \[\]|'\"-]*\])?( *\| *[\w.]+(\[[\w., \[\]|'\"-]*\])?)*")


def _code_in_text(text: str) -> bool:
    """A string that is Python reaching code or the system (an import, an attribute set, a code runner called,
    the course's or the interpreter's modules named): what a listed library could run from a string (a
    benchmark's statement), which no reading of the cell's own code sees. A label (``"softmax(x)"``), a
    sentence, or a snippet of code kept as data to tokenize is not."""
    if "." not in text and "import" not in text and not any(word in text for word in _RUNNERS):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) and (isinstance(
            tree.body[0].value, (ast.Name, ast.Attribute, ast.Constant)) or _TYPE_NAME.fullmatch(text.strip())):
        return False                    # a name ("torch.Tensor") or a type ("list[torch.Tensor] | None")
    # an attribute set to a value that is no literal swaps something in (`k.refusals.watch = quiet`); one set to
    # a literal is prose about code (`"p.grad = None"`, `"h.shape = (B, H)"`)
    swapped = {id(t) for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and n.value is not None and not _literal(n.value)
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])}
    return any(isinstance(n, ast.Import) and any(_reaches(a.name) for a in n.names)
               or isinstance(n, ast.ImportFrom) and _reaches(n.module or "builtins")
               or isinstance(n, ast.Attribute) and (isinstance(n.ctx, ast.Del) or id(n) in swapped)
               or isinstance(n, ast.Name) and n.id in _REACHING and n.id != "torch"
               or isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _RUNNERS
               for n in ast.walk(tree))


def _literal(node: ast.expr) -> bool:
    """A value written out: a constant, or a tuple, list, set or dict of names and constants (``(B, H)``)."""
    return all(isinstance(n, (ast.Constant, ast.Name, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Load,
                              ast.UnaryOp, ast.USub, ast.BinOp, ast.operator))
               for n in ast.walk(node)) and not isinstance(node, ast.Name)


def _reaches(module: str) -> bool:
    """An import in a text that is code: of the course, the interpreter or a module beyond the list."""
    return module.partition(".")[0] in _REACHING or not _listed(module)


# names a text that is code uses to reach the course, the interpreter or the system
_REACHING = ("lmcourse", "tests", "torch", "sys", "os", "builtins", "importlib", "get_ipython", "gc", "inspect",
             "subprocess", "ctypes", "__builtins__")


# builtins that run or reach code by name: in a string that parses, code for whatever evaluates the string
_RUNNERS = ("exec", "eval", "compile", "__import__", "getattr", "setattr", "globals", "vars", "breakpoint")


def _private_path(dotted: str) -> bool:
    return any(part.startswith("_") and not _special(part) for part in dotted.split("."))


_NODE_FINDINGS = (_imports_and_dotted_names, _named, _shell, _magic, _detaching_keyword, _unpickling_keyword,
                  _builtin_by_computed_name, _computed_name, _file_run_as_code, _machinery_write, _beyond_the_list,
                  _module_as_value, _annotation_text, _runner_method, _pieces_of_text)


def _cell_findings(tree: ast.Module, names: Names):
    """Findings of the whole cell: a file's text read and compiled in it (``read_text`` and ``compile``)."""
    used = {n.attr if isinstance(n, ast.Attribute) else n.id for n in _nodes(tree)
            if isinstance(n, (ast.Attribute, ast.Name))}
    read = used & {"read_text", "read_bytes"}
    run = used & {"compile", "exec", "eval"}
    if read and run:
        yield f"{LOADING}: {min(read)} and {min(run)}"


def _findings(tree: ast.Module, names: Names) -> list[str]:
    found: list[str] = []

    def note(what: str) -> None:
        if what not in found:
            found.append(what)

    nodes = _nodes(tree)
    _mark_listed_specials(tree, names)
    keys = {id(n.slice) for n in nodes if isinstance(n, ast.Subscript)}
    inner = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    docstrings = {id(n.value) for n in nodes if isinstance(n, ast.Expr)}
    # a magic's text, as IPython hands it over: read as the magic it is (_magic), not as a string of code
    magics = docstrings | {id(a) for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr in ("run_cell_magic", "run_line_magic", "system", "getoutput") for a in n.args}
    for node in nodes:
        for what in _legacy(node, names, inner, keys):
            note(what)
        for what in _strings(node, names, docstrings):
            note(what)
        for what in _dotted_text(node, names, magics):
            note(what)
        for finding in _NODE_FINDINGS:
            for what in finding(node, names, inner):
                note(what)
    for what in _cell_findings(tree, names):
        note(what)
    return found


# ---------------------------------------------------------------------------------------------------
# The scan
# ---------------------------------------------------------------------------------------------------

def _sys_path(node: ast.AST, sys_names: set[str]) -> bool:
    """``sys.path`` (or its hooks) read through sys by any of its names, through another module's ``sys``
    (``os.sys.path``), or imported from sys."""
    if isinstance(node, ast.Attribute) and node.attr in _PATHS:
        value = node.value
        return (isinstance(value, ast.Name) and value.id in sys_names) or (
            isinstance(value, ast.Attribute) and value.attr == "sys")
    return isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name in _PATHS for a in node.names)


def scan_source(source: str, names: Names | None = None) -> list[str]:
    """What one cell's code names of the above, each once (``names``: what the notebook's other cells
    bound; by default only what this cell binds). A cell that does not parse, after IPython's
    transformation, is a finding."""
    tree, error = _read(source)
    if tree is None:
        return [f"{UNPARSED}: {error}"]
    if names is None:
        names = Names()
        names.learn(tree)
        names.follow([tree])
    return ([error] if error else []) + _findings(tree, names)


def _the_courses(cell, given: set[str]) -> bool:
    """A cell whose text is the course's: a locked cell with a grade id (under ``lmcourse grade`` and
    nbgrader alike the graders restore its text from the release before the scan reads it), or a cell
    left exactly as the course's release gave it (``given``: its cells' texts)."""
    nbg = cell.get("metadata", {}).get("nbgrader") or {}
    return bool(nbg.get("grade_id") and nbg.get("locked")) or _plain(cell.get("source", "")) in given


def _plain(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def scan_cells(nb, skip_tag: str = "", given=None) -> list[str]:
    """The findings in every cell a student could have written: code cells and raw cells that are not
    the course's (:func:`_the_courses`; ``given``: the release notebook, whose unlocked cells the
    student left as they are the course's too) nor the grader's (tagged ``skip_tag``). Markdown never
    runs. A code or raw cell given nbgrader metadata without a grade id is a finding itself."""
    given_texts = {_plain(c.get("source", "")) for c in (given.cells if given is not None else [])
                   if c.get("cell_type") != "markdown" and not (c.get("metadata", {}).get("nbgrader") or {}).get(
                       "solution")}
    cells = [c for c in nb.cells if c.get("cell_type") != "markdown"
             and not (skip_tag and skip_tag in c.get("metadata", {}))]
    read = [_read(c.get("source", "")) for c in cells]
    names = Names()
    for tree, _ in read:
        if tree is not None:
            names.learn(tree)
    names.follow([tree for tree, _ in read if tree is not None])
    found: list[str] = []
    for cell, (tree, error) in zip(cells, read):
        if _the_courses(cell, given_texts):
            continue
        nbg = cell.get("metadata", {}).get("nbgrader")
        # under plain nbgrader the course's config moves such metadata aside before nbgrader reads it
        # (lmcourse.grading.nbgrader_execute.ForeignMetadata): still the student's doing
        moved = FOREIGN in cell.get("metadata", {})
        here = [NO_GRADE_ID] if moved or (nbg is not None and not nbg.get("grade_id")) else []
        if tree is not None:
            here += ([error] if error and cell.get("cell_type") == "code" else []) + _findings(tree, names)
        elif cell.get("cell_type") == "code":       # a raw cell need not be Python
            here.append(f"{UNPARSED}: {error}")
        for what in here:
            if what not in found:
                found.append(what)
    return found


WRITTEN = "code written by the notebook"


def scan_written(files: dict[str, str]) -> list[str]:
    """Findings for the code files a kernel left in its writable folder (the runner lists them): a module the
    notebook wrote and imported is code its cells do not show, so the file itself is a finding, with what the
    scan finds in its text."""
    found: list[str] = []
    for name, text in sorted(files.items()):
        inner = scan_source(text) if name.endswith((".py", ".pyx", ".pth")) else []
        found.append(f"{WRITTEN}: {name}" + (f" ({', '.join(inner)})" if inner else ""))
    return found
