"""The tamper guard inside a student's kernel (installed by the preamble that ``prepare`` injects).

What it must guarantee: the verdict of a test cell depends on nothing the student's code can
rebind, and the guard's own report cannot be forged or silenced without the grader noticing.

How:

* **Snapshot** (before any student cell): every attribute, private ones included, of the
  checking surface: the ``lmcourse`` modules of :data:`SURFACE` (an explicit list, see
  :func:`surface_modules`), ``builtins``, ``math``, ``random``, ``numpy``
  (+ ``numpy.testing``), ``torch`` (+ ``nn``, ``nn.functional``, ``testing``, ``overrides``), the
  ``torch.Tensor`` / ``TensorBase`` method tables, the classes defined in ``lmcourse``; for every
  Python function in them its ``__code__``, ``__defaults__``, ``__kwdefaults__`` and closure;
  their ``sys.modules`` entries, ``sys.meta_path``; IPython's hooks, transformers and the classes
  of the shell, kernel, session and output streams; signal handlers; running threads.
* **Verify and restore** that surface before *and after* every auto-graded test cell (an
  injected guard cell on each side), and again at the entry of every ``lmcourse.checks`` helper
  (each one announces itself with ``sys.audit("lmcourse.check")``), so a self-restoring fake
  installed while the test runs (by a student function the test calls) is found and undone
  before any verdict is computed. Anything found changed zeroes that test (``helpers-tampered``).
* **Call sites**: the grader rewrites each test cell (``instrument``) so that every call to a
  plain name or dotted name (``check_close(...)``, ``torch.softmax(...)``, ``len(...)``) first
  reports the object it is about to call; a check helper, module function or builtin that is
  not the genuine object is flagged. The report needs no name at all: the instrumentation reads
  ``gi_frame`` of a generator made from a lambda, an attribute read that CPython audits, so
  the hook sees it together with the reporting frame (whose code must be the test cell's own).
  The same channel marks the start and the end of the test cell: a test whose error output was
  suppressed (patched IPython or kernel) did not reach its end, and the grader sees that.
* **The test's own names**: the rewritten test cell runs its statements in a function, so what
  it binds under a ``_`` name (its rules object, inputs, expected values, probes) is a local: a
  student's function the test calls cannot rebind or empty it through the notebook's globals
  (``globals()["_rules"] = ...``), only through frames, which are audited. When the cell ends
  those names are copied to the globals, as the cell would have left them.
* **Unforgeable report**: the state lives in a generator held only by a PEP 578 audit hook
  (which cannot be removed); the hook key is made there and printed once, in the preamble's
  output, before any student code runs. Each guard writes ``seq phase grade_id state done``
  signed with HMAC-SHA256 to a log file (a C ``os.write``); the grader (outside the kernel)
  checks signatures, order and completeness. A missing, extra or invalid line flags the test.
* **Out of reach**: the hook's state can be reached only through frames, ``gc`` or ``ctypes``;
  those are audited events (``sys._getframe``, ``sys._current_frames``, ``tb_frame`` /
  ``gi_frame`` reads, ``gc.get_objects`` / ``get_referrers``, ``ctypes.*``, ``sys.settrace`` /
  ``setprofile``, ``sys.addaudithook``, setting a function's ``__code__``), flagged when
  student code (code not from the Python installation or ``lmcourse``) makes them. While the
  hook works, signals are blocked, signal handlers are the genuine ones and the cyclic GC is
  off, so no student code (a handler, a finaliser) runs with the guard's frames on the stack.

Residual risks are listed in ``docs/ta-guide.md`` and ``tests/grading/test_forgery.py``.

Why one module: the grader side (``instrument``, ``guard_source``,
``verify_log``, a small part) and the kernel side (``install``) share one report format and
one hook protocol, read together when either changes. ``install`` is most of the file and is one
closure on purpose: every helper the hook calls is a local of ``install``, reachable only through
the hook's frames (which are audited). Helpers at module level would be looked up through this
module's globals at hook time, which student code can rebind (``lmcourse.grading.guard.X = ...``),
so splitting ``install`` into module functions or modules would widen what the guard must defend.
"""

from __future__ import annotations

import ast

SENTINEL = "lmcourse-guard"
MARKER = "[lmcourse-guard]"
LOG_NAME = ".lmcourse-guard.log"
_EVENT = "lmcourse"          # first item of an instrumentation report


# ------------------------------------------------------------------------ grader side

def _report(*items: ast.expr) -> ast.Attribute:
    """``(lambda *a: (yield))("lmcourse", ...).gi_frame``: an audited read, no name looked up."""
    gen = ast.Call(func=ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=ast.arg(arg="a"),
                                                      kwonlyargs=[], kw_defaults=[], defaults=[]),
                                   body=ast.Yield(value=None)),
                   args=[ast.Constant(_EVENT), *items], keywords=[])
    return ast.Attribute(value=gen, attr="gi_frame", ctx=ast.Load())


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _surface_roots() -> frozenset[str]:
    """First names of the calls worth reporting: the check helpers and rules (their modules'
    ``__all__``: an explicit list, so what ``lmcourse.checks`` imports for itself, ``os``, ``sys``,
    ``Counter``, is no part of it), the module names the guard knows (``np``, ``torch``, ``F``,
    ...) and the builtins; a call of the notebook's own functions or of a test's local objects
    reports nothing."""
    import builtins

    import lmcourse.checks
    import lmcourse.rules

    return frozenset(set(lmcourse.checks.__all__) | set(lmcourse.rules.__all__) | set(vars(builtins)) |
                     {"np", "numpy", "math", "torch", "F", "nn", "random", "lmcourse", "checks"}) - {"super"}


# The guarded surface: what a test cell's verdict rests on, named, not "every module
# but ...". The check helpers and rules (and confine, which the rules enter); the library modules
# the notebooks' setup and test cells import (their inputs, models and training); and every module
# of two packages, so a new notebook needs no edit here: ``lmcourse.reference`` (each notebook's
# REFERENCE, stand-ins and expected-value helpers) and ``lmcourse.nn`` (the reference blocks).
# Whatever these hold from another lmcourse module brings that module in (the closure), so a
# stand-in's helpers are guarded where they live. tests/test_checks.py fails when a
# master's setup or test cell names an lmcourse module outside it.
SURFACE = ("lmcourse", "lmcourse.checks", "lmcourse.rules", "lmcourse.confine", "lmcourse.runtime",
           "lmcourse.data", "lmcourse.tokenizers", "lmcourse.plot", "lmcourse.ngram", "lmcourse.decoding",
           "lmcourse.bpe", "lmcourse.dates", "lmcourse.train", "lmcourse.scaling", "lmcourse.recipes",
           "lmcourse.recipes.scaling",
           # the recording side of a notebook graded from records (not its grader side, .grader)
           "lmcourse.marking", "lmcourse.marking.kernel", "lmcourse.marking.plain", "lmcourse.marking.spec",
           "lmcourse.marking.judge", "lmcourse.marking.show", "lmcourse.marking.standins",
           "lmcourse.marking.notebooks")
SURFACE_PACKAGES = ("lmcourse.reference", "lmcourse.nn")
# never surface, even when a surface module holds one: the grader's and the author's own code
NOT_SURFACE = ("lmcourse.grading", "lmcourse.authoring", "lmcourse.notebook_runner", "lmcourse.cli")
# what a notebook without torch (01) leaves out: the packages and the modules that import torch (the
# loop, decoding, the dates task), so its kernels never load torch (tests/test_checks.py)
LIGHT_LEAVES_OUT = ("lmcourse.train", "lmcourse.decoding", "lmcourse.dates", "lmcourse.scaling", "lmcourse.recipes",
                    "lmcourse.recipes.scaling")


def surface_modules(heavy: bool = True) -> list[str]:
    """Import the surface and return its modules' names, sorted: :data:`SURFACE`, every module of
    :data:`SURFACE_PACKAGES` (``heavy`` only), and the closure: each lmcourse module that a surface
    module holds, or that defines a function or class a surface module holds. A module whose
    import fails (an optional dependency missing) is no part of it."""
    import importlib
    import pkgutil
    import sys
    import types

    names = [n for n in SURFACE if heavy or n not in LIGHT_LEAVES_OUT]
    if heavy:
        for package in SURFACE_PACKAGES:
            names.append(package)
            try:
                path = importlib.import_module(package).__path__
            except Exception:  # noqa: BLE001 (an optional dependency missing: not part of the surface)
                continue
            names += [info.name for info in pkgutil.iter_modules(path, package + ".")]
    found: dict[str, types.ModuleType] = {}
    for name in names:
        try:
            found[name] = importlib.import_module(name)
        except Exception:  # noqa: BLE001 (as above)
            pass

    def course(name) -> bool:
        return type(name) is str and (name == "lmcourse" or name.startswith("lmcourse.")) \
            and not name.startswith(NOT_SURFACE)

    todo = list(found.values())
    while todo:
        for v in list(vars(todo.pop()).values()):
            held = v.__name__ if isinstance(v, types.ModuleType) else getattr(v, "__module__", None) \
                if isinstance(v, (types.FunctionType, type)) else None
            if course(held) and held not in found and isinstance(sys.modules.get(held), types.ModuleType):
                found[held] = sys.modules[held]
                todo.append(found[held])
    return sorted(found)


class _Calls(ast.NodeTransformer):
    roots = None

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        name = _dotted(node.func)
        if _Calls.roots is None:
            _Calls.roots = _surface_roots()
        if name is None or name.split(".")[0] not in _Calls.roots:
            return node
        import copy

        probe = _report(ast.Constant("callee"), copy.deepcopy(node.func), ast.Constant(name))
        return ast.Subscript(value=ast.Tuple(elts=[probe, node], ctx=ast.Load()),
                             slice=ast.Constant(1), ctx=ast.Load())


class _Bound(ast.NodeVisitor):
    """The names a block of statements binds in its own scope (not inside a def, class, lambda or
    comprehension of it, whose names are their own)."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_Name(self, node: ast.Name):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.names.add(node.id)

    def _scope(self, node):
        self.names.add(node.name)
        for d in node.decorator_list:
            self.visit(d)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def visit_Lambda(self, node):
        pass

    def _comprehension(self, node):
        for n in ast.walk(node):            # a walrus in a comprehension binds in the enclosing scope
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                self.names.add(n.target.id)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def _alias(self, node):
        for a in node.names:
            self.names.add((a.asname or a.name).split(".")[0])

    visit_Import = visit_ImportFrom = _alias

    def visit_ExceptHandler(self, node):
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node):
        if node.rest:
            self.names.add(node.rest)
        self.generic_visit(node)


TEST_FUNCTION = "__lmcourse_test__"


def _in_a_function(body: list[ast.stmt]) -> list[ast.stmt]:
    """The test cell's statements as the body of a function, called at once. The names the test
    binds that start with ``_`` (its rules, inputs, expected values, probes) are the function's
    locals: while the test runs, a student's function it calls cannot rebind them through the
    notebook's globals (``globals()["_rules"] = ...``), only through frames, which the hook
    audits. When the body ends, raised or not, they are copied to the notebook's globals, as the
    cell would have left them; the names without ``_`` stay globals throughout (``global``), so
    the cells after the test read them as before."""
    bound = _Bound()
    for stmt in body:
        bound.visit(stmt)
    public = sorted(n for n in bound.names if not n.startswith("_"))
    export = ast.parse("globals().update(locals())").body
    fn = ast.FunctionDef(
        name=TEST_FUNCTION, args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[*([ast.Global(names=public)] if public else []),
              ast.Try(body=body, handlers=[], orelse=[], finalbody=_Calls().visit(ast.Module(export, [])).body)],
        decorator_list=[], returns=None, type_params=[])
    call = ast.Try(body=ast.parse(f"{TEST_FUNCTION}()").body, handlers=[], orelse=[],
                   finalbody=ast.parse(f"del {TEST_FUNCTION}").body)
    return [fn, call]


def instrument(source: str, grade_id: str) -> str:
    """The test cell the kernel runs: a start report, the cell's statements in a function (its
    ``_`` names out of the student's reach while it runs: :func:`_in_a_function`), every named
    call reported before it is made, an end report (reached only when the cell raised nothing).
    Unparseable source is returned as it is (it fails as it would have)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    tree = _Calls().visit(tree)
    begin = ast.Expr(_report(ast.Constant("begin"), ast.Constant(grade_id)))
    # `if True:` keeps the end report a statement, so IPython compiles the cell as one code object
    end = ast.If(test=ast.Constant(True), body=[ast.Expr(_report(ast.Constant("end"), ast.Constant(grade_id)))],
                 orelse=[])
    tree.body = [begin, *(_in_a_function(tree.body) if tree.body else []), end]
    return ast.unparse(ast.fix_missing_locations(tree))


def guard_source(nonce: str, phase: str, grade_id: str) -> str:
    """The injected guard cell: a constant the audit hook recognises when IPython executes it."""
    return f"__lmcourse_guard__ = {f'{SENTINEL} {nonce} {phase} {grade_id}'!r}"


def verify_log(key_hex: str | None, log: str,
               expected: list[tuple[str, str]]) -> tuple[dict[tuple[str, str], dict], set[tuple[str, str]]]:
    """Check the guard log against the guard cells that ran (``expected``: (phase, grade id) in
    order). Returns ({(phase, grade id): {"state": [...], "done": bool}} for the guards with a
    valid report in the right place, the guards whose line is there but forged, unsigned or out
    of place, and every guard after one of those). A guard in neither has no line at all."""
    import hashlib
    import hmac

    out: dict[tuple[str, str], dict] = {}
    lines = [ln for ln in log.splitlines() if ln.strip()]
    try:
        key = bytes.fromhex(key_hex or "")
    except ValueError:
        key = b""
    for i, line in enumerate(lines):
        parts = line.split(" ")
        if i >= len(expected):
            return out, set(expected[-1:])        # more reports than guards: the last is suspect
        ok = bool(key) and len(parts) == 6
        if ok:
            seq, phase, gid, state, done, mac = parts
            want = hmac.new(key, " ".join(parts[:5]).encode(), hashlib.sha256).hexdigest()
            ok = hmac.compare_digest(want, mac) and seq == str(i + 1) and (phase, gid) == expected[i]
        if not ok:      # everything from the first bad line on is unaccounted for
            return out, set(expected[i:])
        out[(phase, gid)] = {"state": [] if state == "ok" else state.split(","), "done": done == "1"}
    return out, set()


# ------------------------------------------------------------------------ kernel side

def install(seed: int, output_cap: int, nonce: str, heavy: bool = True) -> str:
    """Seed, cap the output, snapshot the surface and arm the audit hook. Returns the hook key
    (hex) for the preamble to print once; the guard keeps no other copy outside its hook.
    ``heavy``: the notebook uses torch (imported now, its surface snapshotted); a notebook that
    does not (01) skips that import and the ``lmcourse`` modules that need it."""
    import _hashlib
    import _thread
    import builtins
    import gc
    import math
    import os
    import random
    import signal
    import sys
    import types

    import numpy
    import numpy.testing

    import lmcourse
    import lmcourse.checks

    random.seed(seed)
    numpy.random.seed(seed)
    surface = surface_modules(heavy)       # imported now, before any student cell
    torch = None
    if heavy:
        try:
            import torch
            import torch.nn
            import torch.nn.functional
            import torch.overrides
            import torch.testing
        except Exception:  # noqa: BLE001 (torch is optional for some notebooks)
            torch = None
    if torch is not None:
        torch.manual_seed(seed)
    ip = get_ipython()  # noqa: F821 (IPython's builtin in the kernel)

    class _Capped:
        def __init__(self, stream):
            self.stream, self.left = stream, output_cap

        def write(self, s):
            if self.left <= 0:
                return len(s)
            if len(s) > self.left:
                self.stream.write(s[: self.left] + "\n[output cut: the grader's output cap]\n")
                self.left = 0
                return len(s)
            self.left -= len(s)
            return self.stream.write(s)

        def flush(self):
            return self.stream.flush()

        def __getattr__(self, name):
            return getattr(self.stream, name)

    out, err = _Capped(sys.stdout), _Capped(sys.stderr)
    sys.stdout, sys.stderr = out, err

    # ---- the surface
    strict_mods = [builtins, math] + [sys.modules[n] for n in surface]
    loose_mods = [random, numpy, numpy.testing, types]
    if torch is not None:
        loose_mods += [torch, torch.nn, torch.nn.functional, torch.testing, torch.overrides]
    classes = []
    for m in strict_mods[2:]:
        classes += [o for o in vars(m).values() if isinstance(o, type) and o.__module__ == m.__name__]
    if torch is not None:
        classes += [torch.Tensor]
        classes += [c for c in torch.Tensor.__mro__[1:] if c is not object]
    for obj in (ip, getattr(ip, "kernel", None), getattr(getattr(ip, "kernel", None), "session", None),
                out.stream, err.stream, ip.displayhook, ip.display_pub, ip.events):
        if obj is not None:
            classes += [c for c in type(obj).__mro__ if c is not object and c not in classes]
    # ipykernel rebinds builtins.input (and getpass) for every request it serves
    mods = [(m, vars(m), {k: v for k, v in vars(m).items() if k not in ("input", "raw_input")}, True)
            for m in strict_mods[:1]]
    mods += [(m, vars(m), dict(vars(m)), True) for m in strict_mods[1:]]
    mods += [(m, vars(m), dict(vars(m)), False) for m in loose_mods]
    mod_names = {m.__name__: m for m, *_ in mods}
    cls_snap = []
    for c in classes:
        try:
            cls_snap.append((c, dict(vars(c))))
        except TypeError:
            pass
    funcs = {}

    def _add_func(f):
        if isinstance(f, (staticmethod, classmethod)):
            f = f.__func__
        if isinstance(f, property):
            for g in (f.fget, f.fset, f.fdel):
                _add_func(g)
            return
        if type(f) is types.FunctionType and id(f) not in funcs:
            cells = f.__closure__ or ()
            contents = []
            for cell in cells:
                try:
                    contents.append(cell.cell_contents)
                except ValueError:
                    contents.append(cells)    # an empty cell: marked by a value no cell holds
            kw = f.__kwdefaults__
            funcs[id(f)] = (f, f.__code__, f.__defaults__, kw, dict(kw) if kw else None, cells, tuple(contents))

    for _, _, snap, _ in mods:
        for v in snap.values():
            _add_func(v)
    for _, snap in cls_snap:
        for v in snap.values():
            _add_func(v)
    func_list = tuple(funcs.values())
    labels = {id(m): m.__name__ for m, *_ in mods}
    labels.update({id(c): f"{c.__module__}.{c.__qualname__}" for c, _ in cls_snap})
    labels.update({k: f"{getattr(v[0], '__module__', '?')}.{v[0].__qualname__}" for k, v in funcs.items()})
    genuine_funcs = frozenset(funcs)
    modules_entries = tuple((n, sys.modules.get(n)) for n in mod_names if sys.modules.get(n) is not None)
    meta_path = (sys.meta_path, tuple(sys.meta_path), sys.path_hooks, tuple(sys.path_hooks))
    checks = lmcourse.checks
    check_api = {n: getattr(checks, n) for n in checks.__all__       # the helpers a test cell calls by name
                 if callable(getattr(checks, n)) and getattr(getattr(checks, n), "__module__", "") == checks.__name__}
    aliases = {"np": numpy, "numpy": numpy, "math": math}
    if torch is not None:
        aliases.update(torch=torch, F=torch.nn.functional, nn=torch.nn)
    expected_names = {**check_api, **aliases}
    user_ns = ip.user_ns
    ip_dict = vars(ip)
    own_tb = (ip_dict.get("showtraceback"), ip_dict.get("_showtraceback"))
    callbacks = ip.events.callbacks
    hooks = {e: (cbs, tuple(cbs)) for e, cbs in callbacks.items()}
    transformers = (ip.input_transformers_post, tuple(ip.input_transformers_post),
                    ip.ast_transformers, tuple(ip.ast_transformers))
    import _signal

    signals = []
    for s in signal.valid_signals():
        try:
            signals.append((s, _signal.getsignal(s)))
        except (OSError, ValueError):
            pass
    trusted = tuple(sorted({os.path.realpath(p) + os.sep for p in
                            (sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.__file__),
                             lmcourse.__path__[0])} |
                           {p + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, lmcourse.__path__[0])}))
    run_code = type(ip).run_code
    run_code = getattr(run_code, "__code__", None)
    lmcourse_prefix = os.path.realpath(lmcourse.__path__[0]) + os.sep
    log_fd = os.open(os.path.join(os.getcwd(), LOG_NAME), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    tf_len = getattr(torch._C, "_len_torch_function_stack", None) if torch is not None else None
    tf_at = getattr(torch._C, "_get_function_stack_at", None) if torch is not None else None
    td_at = getattr(torch._C, "_get_dispatch_stack_at", None) if torch is not None else None
    td_len = getattr(torch._C, "_len_torch_dispatch_stack", None) if torch is not None else None
    baseline_threads = frozenset(sys._current_frames())
    main_thread = _thread.get_ident()

    watched = frozenset({
        "exec", "lmcourse.check", "object.__getattr__", "object.__setattr__", "object.__delattr__",
        "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.addaudithook",
        "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__", "open",
        "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata", "ctypes.cdata/buffer",
        "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at", "ctypes.call_function",
        "ctypes.get_errno", "ctypes.set_errno", "ctypes.create_string_buffer", "ctypes.seh_exception",
        "ctypes.PyObj_FromPtr", "sys._current_exceptions", "function.__new__", "compile", "marshal.loads",
    })

    def engine_fn(L):
        # everything below reads only locals: nothing student code can rebind is looked up here
        (_type, _id, _len, _str, _tuple, _list, _dict, _frozenset, _enumerate, _zip, _getattr,
         _setattr, _delattr, _vars, _hasattr, _exc, _sorted, _repr, _range, _set) = L["builtins"]
        _ValueError, _TypeError, _AttributeError, _OSError = L["errors"]
        (_getframe, _cur_frames, _ident, _write, _hmac, _sig_get, _sig_set, _code_t, _func_t,
         _mod_t, _gen_t, _urandom, _frame_t) = L["c"]
        _type_setattr, _type_delattr, _obj_setattr = L["setattrs"]
        mods, cls_snap, func_list, genuine_funcs = L["mods"], L["cls_snap"], L["func_list"], L["genuine_funcs"]
        modules_entries, sys_modules_get, sys_dict, sys_modules = (L["modules_entries"], L["sys_modules_get"],
                                                                   L["sys_dict"], L["sys_modules"])
        meta_path, expected_names, user_ns, ip_dict, own_tb = (L["meta_path"], L["expected_names"],
                                                               L["user_ns"], L["ip_dict"], L["own_tb"])
        ip, callbacks, hooks, transformers, signals = (L["ip"], L["callbacks"], L["hooks"], L["transformers"],
                                                       L["signals"])
        trusted, run_code, lm_prefix, _fd, out_err = (L["trusted"], L["run_code"], L["lm_prefix"],
                                                         L["log_fd"], L["out_err"])
        tf_len, tf_at, td_len, baseline_threads, main_thread, grave = (L["tf_len"], L["tf_at"], L["td_len"],
                                                                       L["baseline_threads"], L["main_thread"],
                                                                       L["grave"])
        mod_by_id = {_id(m): (d, snap) for m, d, snap, _ in mods}
        cls_by_id = {_id(c): snap for c, snap in cls_snap}
        builtins_snap = mods[0][2]
        hook_code, labels, events_dict = L["hook_code"], L["labels"], L["events_dict"]
        entry = L["entry"]       # what the check helpers themselves use
        # set by Python itself: warnings (a module's registry), ipykernel (input per request)
        # and copyreg (a class's __slotnames__, cached on the first copy or pickle)
        volatile = _frozenset({"__warningregistry__", "input", "raw_input", "__slotnames__"})
        ns_init = L["ns_init"]
        entry_mods = [x for x in mods if _id(x[0]) in entry]
        entry_funcs = [x for x in func_list if x[0].__module__ in ("lmcourse.checks", "math")]
        entry_classes = [x for x in cls_snap if _id(x[0]) in entry]
        L_events, L_method, L_sentinel, L_nonce = L["misc"]
        package_dict, package_prefix = L["package"]
        td_at = L["td_at"]
        wrappers, wrapped = L["wrappers"]
        mro_of, dict_of = _type.__dict__["__mro__"].__get__, _type.__dict__["__dict__"].__get__
        locked_armed, locked_file = False, None
        del L
        me = yield None                # this generator's own frame (read before the hook exists)
        key = _urandom(32)
        seq = 0
        flags: list[str] = []          # found since the last guard
        armed = None                   # grade id of the test between its two guards
        test_codes = _set()
        seen_codes = _set()            # every test cell's code so far (lambdas are shared)
        test_file = None
        done = False
        begun = False
        msg = yield key.hex()

        def student(code) -> bool:
            fn = code.co_filename
            return _type(fn) is not _str or not (fn.startswith(trusted) or fn.startswith("<frozen "))

        def bury(x):
            grave.append(x)

        def is_in(x, seq_):
            for y in seq_:
                if x is y:
                    return True
            return False

        def flag(name):
            if name not in flags:
                flags.append(name)

        def submodule(d, k):
            # a module of the package imported after the snapshot (one outside the surface, such
            # as lmcourse.paths): Python sets it on the package; no test cell reads it
            v = d[k]
            return d is package_dict and _type(v) is _mod_t and v.__dict__.get("__name__") == package_prefix + k

        def verify_modules(which=None):
            for m, d, snap, strict in (mods if which is None else which):
                label = labels[_id(m)]
                odd = [k for k in d if _type(k) is not _str]
                if odd:                      # never hash a student's key object
                    flag(f"{label}.<non-str key>")
                    items = [(k, v) for k, v in d.items() if _type(k) is _str]
                    bury(_list(d.items()))
                    d.clear()
                    d.update(items)
                for k, v in _list(snap.items()):
                    cur = d.get(k, d)
                    if cur is not v:
                        if not strict and _type(cur) is _func_t and cur.__dict__.get("__wrapped__") is v \
                                and not student(cur.__code__):
                            snap[k] = cur        # a library's own wrapper (torch._dynamo wraps manual_seed)
                            continue
                        flag(f"{label}.{k}")
                        bury(cur)
                        d[k] = v
                if strict and _len(d) != _len(snap):
                    for k in [k for k in d if k not in snap and k not in volatile and not submodule(d, k)]:
                        flag(f"{label}.{k}")
                        bury(d.pop(k))
            if any_odd_key(sys_modules):
                flag("sys.modules.<non-str key>")
                items = [(k, v) for k, v in sys_modules.items() if _type(k) is _str]
                bury(_list(sys_modules.items()))
                sys_modules.clear()
                sys_modules.update(items)
            for n, m in modules_entries:
                cur = sys_modules_get(n)
                if cur is not m:
                    flag(f"sys.modules[{n}]")
                    bury(cur)
                    sys_modules[n] = m
            if sys_dict.get("modules") is not sys_modules:
                flag("sys.modules")
                bury(sys_dict.get("modules"))
                sys_dict["modules"] = sys_modules

        def verify_functions(which=None):
            for f, code, defaults, kw, kw_items, cells, contents in (func_list if which is None else which):
                label = labels[_id(f)]
                if f.__code__ is not code:
                    flag(f"{label}.__code__")
                    bury(f.__code__)
                    _obj_setattr(f, "__code__", code)
                if f.__defaults__ is not defaults:
                    flag(f"{label}.__defaults__")
                    bury(f.__defaults__)
                    _obj_setattr(f, "__defaults__", defaults)
                if f.__kwdefaults__ is not kw:
                    flag(f"{label}.__kwdefaults__")
                    bury(f.__kwdefaults__)
                    _obj_setattr(f, "__kwdefaults__", kw)
                if kw is not None and (_len(kw) != _len(kw_items) or any_odd_key(kw) or
                                       changed(kw, kw_items)):
                    flag(f"{label}.__kwdefaults__")
                    bury(_list(kw.items()))
                    kw.clear()
                    kw.update(kw_items)
                for cell, v in _zip(cells, contents):
                    if v is cells:
                        continue
                    try:
                        cur = cell.cell_contents
                    except _ValueError:
                        cur = cells
                    if cur is not v:
                        flag(f"{label}.<closure>")
                        bury(cur)
                        cell.cell_contents = v

        def verify_classes(which=None):
            for c, snap in (cls_snap if which is None else which):
                d = c.__dict__
                label = labels[_id(c)]
                for k, v in snap.items():
                    cur = d.get(k, d)
                    if cur is not v:
                        flag(f"{label}.{k}")
                        bury(cur)
                        try:
                            _type_setattr(c, k, v)
                        except (_TypeError, _AttributeError):
                            pass
                if _len(d) != _len(snap):
                    for k in [k for k in d if _type(k) is _str and k not in snap and k not in volatile]:
                        flag(f"{label}.{k}")
                        bury(d.get(k))
                        try:
                            _type_delattr(c, k)
                        except (_TypeError, _AttributeError):
                            pass

        def own_mode(mode, slot):
            # a mode of lmcourse's or of the notebook's locked / test cells (04 refuses kernels
            # with a dispatch mode of its own); a mode of the student's decides nothing
            fn = _type(mode).__dict__.get(slot)
            while _type(fn) is _func_t and not student(fn.__code__) and \
                    _type(fn.__dict__.get("__wrapped__")) is _func_t:
                fn = fn.__dict__["__wrapped__"]      # torch wraps a mode's handler (_disable_dynamo)
            code = fn.__code__ if _type(fn) is _func_t else None
            return code is not None and (code in seen_codes or (
                _type(code.co_filename) is _str and code.co_filename.startswith(lm_prefix)))

        def verify_torch_modes():
            if tf_len is not None:
                for i in _range(tf_len()):
                    if not own_mode(tf_at(i), "__torch_function__"):
                        flag("torch-function-mode")
            if td_len is not None:
                for i in _range(td_len()):
                    if not own_mode(td_at(i), "__torch_dispatch__"):
                        flag("torch-dispatch-mode")

        def verify_ipython():
            if any_odd_key(user_ns):
                flag("user namespace key")
                items = [(k, v) for k, v in user_ns.items() if _type(k) is _str]
                bury(_list(user_ns.items()))
                user_ns.clear()
                user_ns.update(items)
            for name, obj in expected_names.items():
                cur = user_ns.get(name, user_ns)
                if cur is not user_ns and cur is not obj:
                    flag(name)
                    bury(cur)
                    user_ns[name] = obj
            for attr, orig in _zip(("showtraceback", "_showtraceback"), own_tb):
                cur = ip_dict.get(attr, ip_dict)
                if cur is not (ip_dict if orig is None else orig):
                    flag(attr)
                    bury(cur)
                    if orig is None:
                        ip_dict.pop(attr, None)
                    else:
                        ip_dict[attr] = orig
            ce = ip_dict.get("custom_exceptions", ())
            if _type(ce) is not _tuple or ce:
                flag("set_custom_exc")
                bury(ce)
                ip_dict["custom_exceptions"] = ()
            if ip_dict.get("events") is not L_events or events_dict.get("callbacks") is not callbacks:
                flag("events")
                bury((ip_dict.get("events"), events_dict.get("callbacks")))
                ip_dict["events"] = L_events
                events_dict["callbacks"] = callbacks
            if any_odd_key(callbacks):
                flag("events")
                items = [(k, v) for k, v in callbacks.items() if _type(k) is _str]
                bury(_list(callbacks.items()))
                callbacks.clear()
                callbacks.update(items)
            for event, cbs in _list(callbacks.items()):
                base = hooks.get(event)
                if base is not None and cbs is not base[0]:
                    flag(f"events.{event}")
                    bury(cbs)
                    callbacks[event] = cbs = base[0]
                if _type(cbs) is not _list:
                    flag(f"events.{event}")
                    bury(cbs)
                    callbacks[event] = cbs = []
                keep = []
                for cb in cbs:
                    if base is not None and is_in(cb, base[1]):
                        keep.append(cb)
                        continue
                    f = cb.__func__ if _type(cb) is L_method else cb
                    code = f.__code__ if _type(f) is _func_t else None
                    if code is not None and not student(code):
                        keep.append(cb)          # libraries register hooks on import (matplotlib)
                if _len(keep) != _len(cbs):
                    flag(f"events.{event}")
                    bury(_list(cbs))
                    cbs[:] = keep
            for attr, lst, orig in (("input_transformers_post", transformers[0], transformers[1]),
                                    ("ast_transformers", transformers[2], transformers[3])):
                if _getattr(ip, attr, None) is not lst:
                    flag("transformers")
                    bury(_getattr(ip, attr, None))
                    _setattr(ip, attr, lst)
                if _len(lst) != _len(orig) or not same_items(lst, orig):
                    flag("transformers")
                    bury(_list(lst))
                    lst[:] = orig
            if sys_dict.get("stdout") is not out_err[0] or sys_dict.get("stderr") is not out_err[1]:
                bury((sys_dict.get("stdout"), sys_dict.get("stderr")))
                sys_dict["stdout"], sys_dict["stderr"] = out_err
            for lst, orig in ((meta_path[0], meta_path[1]), (meta_path[2], meta_path[3])):
                if (_len(lst) != _len(orig) or not same_items(lst, orig)) and not library_additions(lst, orig):
                    flag("sys.meta_path")
                    bury(_list(lst))
                    lst[:] = orig
            if sys_dict.get("meta_path") is not meta_path[0] or sys_dict.get("path_hooks") is not meta_path[2]:
                flag("sys.meta_path")
                sys_dict["meta_path"], sys_dict["path_hooks"] = meta_path[0], meta_path[2]

        def library_code(x):
            # a function whose code lives in an installed library: not the notebook, not lmcourse
            if is_in(_type(x), wrappers):
                x = wrapped(x)
            if _type(x) is L_method:
                x = x.__func__
            if _type(x) is not _func_t:
                return True           # C code (builtins, slots): nothing a notebook wrote
            fn = x.__code__.co_filename     # frozen stdlib modules (abc) count as library, as in student()
            return _type(fn) is _str and (fn.startswith(trusted) or fn.startswith("<frozen ")) \
                and not fn.startswith(lm_prefix)

        def library_finder(f):
            # the finder's class chain and its metaclass's (read past any metaclass), then its own
            # attributes (a callable handed to a library's finder is checked too)
            is_cls = is_in(_type, mro_of(_type(f)))
            cls = f if is_cls else _type(f)
            for c in mro_of(cls) + mro_of(_type(cls)):
                for v in dict_of(c).values():
                    if not library_code(v):
                        return False
            if _type(f) is _func_t:
                return library_code(f)
            if is_cls:
                return True
            try:
                d = _vars(f)          # safe: no notebook code in its class chain (checked above)
            except _TypeError:
                return True
            if _type(d) is not _dict:
                return False
            for v in d.values():
                if not library_code(v):
                    return False
            return True

        def library_additions(lst, orig):
            # importing a library adds its finder (transformers' legacy aliases, setuptools'
            # _distutils_hack): allowed when every original stays, in order, and each addition is
            # library code; lmcourse's modules are imported already, so no finder can replace them
            i = 0
            for x in _list(lst):
                if i < _len(orig) and x is orig[i]:
                    i += 1
                elif not library_finder(x):
                    return False
            return i == _len(orig)

        def any_odd_key(d):
            for k in d:
                if _type(k) is not _str:
                    return True
            return False

        def changed(d, snap):
            for k, v in snap.items():
                if d.get(k, d) is not v:
                    return True
            return False

        def same_items(a, b):
            for x, y in _zip(a, b):
                if x is not y:
                    return False
            return True

        def verify_signals():
            for s, h in signals:
                cur = _sig_get(s)
                if cur is not h:
                    flag(f"signal {s}")
                    bury(cur)
                    try:
                        _sig_set(s, h)
                    except (_OSError, _ValueError, _TypeError):
                        pass

        def verify_threads():
            frames = _cur_frames()
            frame = f = None
            for tid, frame in frames.items():
                if tid == main_thread or tid in baseline_threads:
                    continue
                f = frame
                while f is not None:
                    if student(f.f_code):
                        burn("thread")       # it could race the guard for its state
                        break
                    f = f.f_back
            del frames, frame, f

        def verify_all():
            verify_signals()
            verify_modules()
            verify_functions()
            verify_classes()
            verify_ipython()
            verify_torch_modes()
            verify_threads()

        def resolve(dotted, obj):
            """The genuine object a dotted name in a test cell should reach, or ``obj`` itself
            when the name is not one of the surface's."""
            nonlocal ns_len
            parts = dotted.split(".")
            root = parts[0]
            if root in expected_names:       # a check helper, np, math, torch, F, nn
                cur = expected_names[root]
            elif root not in builtins_snap and _len(parts) == 1:
                return obj                   # a name of the notebook's own (a graded function)
            elif _len(user_ns) != ns_len and any_odd_key(user_ns):
                flag("user namespace key")   # (scanned again only when the namespace changed size)
                return obj
            else:
                ns_len = _len(user_ns)
                if root in user_ns:
                    cur = user_ns[root]
                    if _id(cur) not in mod_by_id:
                        if ns_init.get(root, ns_init) is cur:
                            return obj       # IPython's own (its `open`, `exit`)
                        # a builtin's name bound by the student: the test meant the builtin
                        return builtins_snap.get(root, obj) if _len(parts) == 1 else obj
                elif root in builtins_snap:
                    cur = builtins_snap[root]
                else:
                    return obj
            for p in parts[1:]:
                entry = mod_by_id.get(_id(cur))
                if entry is not None and entry[0] is _getattr(cur, "__dict__", None):
                    cur = entry[1].get(p, obj)
                    continue
                snap = cls_by_id.get(_id(cur))
                if snap is not None:
                    cur = snap.get(p, obj)
                    continue
                return obj
            return cur

        ns_len = -1

        def caller_is_student(frame):
            # inspect.currentframe / inspect.stack / traceback.walk_*: look past them
            n = 0
            while frame is not None and n < 4 and not student(frame.f_code) and \
                    frame.f_code.co_filename.endswith(("/inspect.py", "/traceback.py")):
                frame = frame.f_back
                n += 1
            return frame is not None and student(frame.f_code)

        def burn(name):
            # student code reached for frames, objects or memory: the key may be next, so it
            # goes now (before the audited operation returns); every later report is unsigned
            nonlocal key
            flag(name)
            key = None

        def sign_write(phase, gid, state, done_):
            nonlocal seq
            seq += 1
            body = f"{seq} {phase} {gid} {state} {1 if done_ else 0}"
            mac = "burned" if key is None else _hmac(key, body.encode(), "sha256").hex()
            return f"{body} {mac}\n".encode()     # written by the hook, once the engine rests

        while True:
            event, args, frame = msg
            reply = None
            try:
                caller = me.f_back
                if caller is None or caller.f_code is not hook_code or _type(args) is not _tuple or \
                        (frame is not None and _type(frame) is not _frame_t):
                    flag("forged report")
                    event = ""
                del caller
                if event == "exec":
                    code = args[0]
                    consts = code.co_consts if _type(code) is _code_t else ()
                    if locked_armed and consts and frame is not None and frame.f_code is run_code:
                        if locked_file is None:          # a locked cell of the notebook: trusted code
                            locked_file = code.co_filename
                        if code.co_filename == locked_file:
                            stack = [code]
                            while stack:
                                c = stack.pop()
                                seen_codes.add(c)
                                stack += [k for k in c.co_consts if _type(k) is _code_t]
                    if armed is not None and consts and frame is not None and frame.f_code is run_code:
                        # IPython runs each statement of a cell as its own code object: those
                        # of the test cell (one file name) are the ones allowed to report
                        if test_file is None:
                            test_file = code.co_filename
                        if code.co_filename == test_file:
                            stack = [code]
                            while stack:
                                c = stack.pop()
                                test_codes.add(c)
                                seen_codes.add(c)
                                stack += [k for k in c.co_consts if _type(k) is _code_t]
                    tag = None
                    for c in consts:
                        if _type(c) is _str and c.startswith(L_sentinel):
                            tag = c
                            break
                    if tag is not None:
                        _, nonce_, phase, gid = (tag.split(" ") + ["", "", "", ""])[:4]
                        if nonce_ != L_nonce or frame is None or frame.f_code is not run_code:
                            flag("guard-forged")
                        elif phase == "locked":
                            locked_armed, locked_file = True, None
                        else:
                            locked_armed = False
                            verify_all()
                            if phase == "before":
                                if armed is not None:
                                    flag("guard-order")
                                armed, begun, done = gid, False, False
                                test_codes, test_file = _set(), None
                            else:
                                if armed != gid:
                                    flag("guard-order")
                                if not begun:
                                    flag("test-not-run")
                            state = "ok" if not flags else ",".join(_sorted(_set(flags)))
                            state = state.replace(" ", "_")
                            reply = sign_write(phase, gid, state, done if phase == "after" else False)
                            flags = []
                            if phase == "after":
                                armed, begun, done, test_codes, test_file = None, False, False, _set(), None
                elif event == "object.__getattr__":
                    obj, name = args[0], args[1]
                    if _type(name) is not _str:
                        name = ""
                    if name == "gi_frame" and _type(obj) is _gen_t and frame is not None:
                        gf = obj.gi_frame
                        items = gf.f_locals.get("a") if gf is not None else None
                        if (_type(items) is _tuple and _len(items) >= 2 and _type(items[0]) is _str
                                and items[0] == "lmcourse"):
                            kind = items[1] if _type(items[1]) is _str else ""
                            gid_ = items[2] if _len(items) > 2 and _type(items[2]) is _str else None
                            if kind == "begin":
                                if armed is None or begun or gid_ != armed or frame.f_code not in test_codes:
                                    flag("test-begin")
                                else:
                                    begun = True
                            elif frame.f_code in test_codes:
                                if kind == "callee" and _len(items) == 4 and _type(items[3]) is _str:
                                    got = items[2]
                                    want = resolve(items[3], got)
                                    if want is not got:
                                        flag(f"called {items[3]}")
                                    verify_torch_modes()
                                elif kind == "end" and gid_ is not None and gid_ == armed:
                                    done = True
                            elif kind == "callee" and frame.f_code in seen_codes and _len(items) == 4 \
                                    and _type(items[3]) is _str:
                                if resolve(items[3], items[2]) is not items[2]:
                                    flag(f"called {items[3]}")
                            elif kind != "callee":
                                flag("forged report")
                            del items, gf
                            msg = yield None
                            continue
                    if name in ("tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back") and \
                            caller_is_student(frame):
                        burn(f"frame access ({name})")
                elif event == "lmcourse.check":
                    # a check helper is about to decide: what it uses must be genuine right now
                    verify_modules(entry_mods)
                    verify_functions(entry_funcs)
                    verify_classes(entry_classes)
                    verify_torch_modes()
                elif event == "object.__setattr__" or event == "object.__delattr__":
                    target, name = args[0], args[1]
                    if _id(target) in genuine_funcs or _id(target) in cls_by_id or _id(target) in mod_by_id:
                        flag(f"set {name}" if _type(name) is _str else "set ?")
                    elif _type(name) is _str and name == "__class__" and caller_is_student(frame):
                        # an object's class swapped under it (a test's input tensor made a subclass whose
                        # __torch_function__ forges the expected value, then put back): no answer needs it
                        flag("set __class__")
                elif event in ("sys.settrace", "sys.setprofile"):
                    if caller_is_student(frame):
                        burn(event)
                elif event == "compile":
                    fn = args[1] if _len(args) > 1 and _type(args[1]) is _str else ""
                    if (fn == test_file or fn.startswith(trusted) or fn.startswith("<frozen ")) and \
                            caller_is_student(frame):
                        flag("compile under a borrowed file name")
                elif event == "open":
                    path = args[0]
                    if _type(path) is _str and path.startswith("/proc/") and path.endswith("/mem") and \
                            caller_is_student(frame):
                        burn("open /proc memory")
                elif event in ("sys._getframe", "sys._current_frames", "sys._current_exceptions", "marshal.loads",
                               "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__",
                               "function.__new__", "sys.addaudithook"):
                    if event in ("code.__new__", "function.__new__"):
                        if caller_is_student(frame):
                            flag(event)
                    elif caller_is_student(frame) or event == "sys.addaudithook":
                        burn(event)
                elif event[:7] == "ctypes.":
                    if caller_is_student(frame):
                        burn("ctypes")
            except _exc as exc:  # noqa: BLE001 (never break the audited operation)
                flag(f"guard-error:{_type(exc).__name__}")
            del event, args, frame
            msg = yield reply

    def _gi_running(gen):
        getter = type(gen).gi_running.__get__
        return lambda: getter(gen)

    grave: list = []   # what a restore replaced: kept alive, so no student finaliser runs in the guard
    L = {
        "errors": (ValueError, TypeError, AttributeError, OSError),
        "builtins": (type, id, len, str, tuple, list, dict, frozenset, enumerate, zip, getattr, setattr,
                     delattr, vars, hasattr, BaseException, sorted, repr, range, set),
        "c": (sys._getframe, sys._current_frames, _thread.get_ident, os.write, _hashlib.hmac_digest,
              _signal.getsignal, _signal.signal, types.CodeType, types.FunctionType, types.ModuleType,
              types.GeneratorType, os.urandom, types.FrameType),
        "setattrs": (type.__setattr__, type.__delattr__, object.__setattr__),
        "mods": mods, "cls_snap": cls_snap, "func_list": func_list, "genuine_funcs": genuine_funcs,
        "modules_entries": modules_entries, "sys_modules_get": sys.modules.get, "sys_dict": vars(sys),
        "sys_modules": sys.modules, "meta_path": meta_path, "expected_names": expected_names,
        "user_ns": user_ns, "ip_dict": ip_dict, "own_tb": own_tb, "ip": ip, "callbacks": callbacks,
        "hooks": hooks, "transformers": transformers, "signals": tuple(signals), "trusted": trusted,
        "run_code": run_code, "lm_prefix": lmcourse_prefix, "log_fd": log_fd, "out_err": (out, err),
        "tf_len": tf_len, "tf_at": tf_at, "td_at": td_at, "td_len": td_len, "baseline_threads": baseline_threads,
        "main_thread": main_thread, "grave": grave, "labels": labels, "events_dict": vars(ip.events),
        "misc": (ip.events, types.MethodType, SENTINEL, nonce),
        "package": (vars(lmcourse), "lmcourse."),
        "wrappers": ((classmethod, staticmethod, property), lambda w: w.fget if type(w) is property else w.__func__),
        "ns_init": {k: v for k, v in user_ns.items() if type(k) is str and k in vars(builtins)},
        "entry": frozenset(id(x) for x in (builtins, math, checks, numpy, torch, sys.modules.get("collections"),
                                           getattr(torch, "Tensor", None),
                                           getattr(getattr(torch, "_C", None), "TensorBase", None))
                           if x is not None),
    }
    sigmask, block, all_signals = _signal.pthread_sigmask, _signal.SIG_SETMASK, signal.valid_signals()
    gc_enabled, gc_disable, gc_enable = gc.isenabled, gc.disable, gc.enable
    ValueError_, BaseException_, RuntimeError_, type_, str_ = ValueError, BaseException, RuntimeError, type, str
    engine_code = engine_fn.__code__
    write = os.write
    harmless = frozenset({"f_code", "__code__", "gi_code", "cr_code", "ag_code", "tb_lasti", "f_lasti"})
    hostile = frozenset({"object.__getattr__", "sys._getframe", "sys._current_frames", "gc.get_objects",
                         "gc.get_referrers", "gc.get_referents", "sys._current_exceptions"})
    send = None

    def hook(event, args):
        # nothing here is secret: the state is in the engine (a generator) whose frame only
        # audited reads reach; an exception raised here aborts the audited operation
        if type_(event) is not str_ or event not in watched:
            return
        if event == "object.__getattr__" and type_(args[1]) is str_ and args[1] in harmless:
            return                       # code objects hold no secret (the guard reads many)
        if running():
            # the engine's own audited reads (f_code, __code__, ...), or another thread's
            # event while the engine works: that one may not reach for frames meanwhile
            if event in hostile:
                try:
                    f = where()
                except ValueError_:
                    f = None
                while f is not None and f.f_code is not engine_code:   # (f_code: a harmless read)
                    f = f.f_back
                if f is None:
                    raise RuntimeError_("lmcourse guard: busy")
            return
        try:
            old = sigmask(block, all_signals)
        except BaseException_:  # noqa: BLE001
            old = None
        was = gc_enabled()
        gc_disable()
        line = None
        try:
            try:
                frame = where()          # the frame that made the event (no audited call)
            except ValueError_:
                frame = None             # another thread is asking at the same moment
            line = send((event, args, frame))
        except BaseException_:  # noqa: BLE001 (a dead engine: its silence is the report)
            pass
        finally:
            frame = None
            if was:
                gc_enable()
            if old is not None:
                sigmask(block, old)
        if line is not None:
            write(log_fd, line)

    def _where():
        me = yield None
        while True:
            yield me.f_back.f_back       # me.f_back is the hook; its caller made the event

    probe = _where()
    next(probe)
    probe.send(probe.gi_frame)
    where = probe.__next__
    L["hook_code"] = hook.__code__
    engine = engine_fn(L)
    del L
    next(engine)
    key_hex = engine.send(engine.gi_frame)
    send = engine.send
    running = _gi_running(engine)
    sys.addaudithook(hook)
    return key_hex
