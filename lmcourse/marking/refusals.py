"""The refusals a graded call runs under, in the student's kernel: the code of named functions,
torch functions and kernels, and library code, refused however it is reached; and the
stand-ins put in the notebook's namespace for the call (:func:`substitute`).

:mod:`lmcourse.marking.rules` composes them into one graded-call context; :mod:`lmcourse.marking.kernel`
runs a test's cases under it. A refusal raises :class:`~lmcourse.checks.CheckFailed` saying what
the student's code called and why it may not. They are the second line: the grader judges the
records outside the kernel, so these only keep third-party and course code from doing an
exercise's work (the answers of the notebook are withheld from its kernel anyway).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import itertools
import os
import sys
from types import CodeType, ModuleType
from typing import Any

from lmcourse.checks import CheckFailed, check

__all__ = ["forbid_calls", "forbid_kernels", "forbid_references", "forbid_torch_functions", "own_code", "watch",
           "python_decompositions", "substitute"]


@contextlib.contextmanager
def forbid_torch_functions(*name_substrings: str, reason: str = "a graded answer must be your own code"):
    """Within the block, calling any torch function whose ``__name__`` contains one of
    ``name_substrings`` raises :class:`CheckFailed`, however it is reached: ``torch.X``,
    ``torch._VF.X``, ``torch._C._VariableFunctions.X``, ``torch.ops.aten.X`` or an ``nn`` module
    that calls it (e.g. ``forbid_torch_functions("rnn_tanh")`` blocks ``nn.RNN``). A
    :class:`torch.overrides.TorchFunctionMode`, so rebinding names cannot get around it."""
    from torch.overrides import TorchFunctionMode

    refused: dict = {}      # name -> whether it is refused: every torch call of the block asks

    class _Forbid(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            bad = refused.get(name) if type(name) is str else None
            if bad is None:
                bad = any(s in name for s in name_substrings)
                if type(name) is str:
                    refused[name] = bad
            if bad:
                raise CheckFailed(f"your code called torch.{name}: {reason}")
            return func(*args, **(kwargs or {}))

    with _Forbid():
        yield


def _code_objects(target: Any, found: dict, label: str, home: str | None = None) -> None:
    """Every code object that running ``target`` may execute: a function's own code and the
    functions nested in it; for a class, every function in its own body (not its bases');
    for a module, every function and class defined in it.

    Only code written in the target's own source file counts (``home``): a decorator's wrapper
    or a dataclass's generated ``__repr__`` is shared with every other decorated function or
    dataclass, and forbidding it would forbid them all."""
    import inspect
    import sys
    import types

    if isinstance(target, types.ModuleType):
        home = getattr(target, "__file__", None)
        for name, obj in vars(target).items():
            if getattr(obj, "__module__", None) == target.__name__:
                _code_objects(obj, found, f"{target.__name__}.{name}", home)
        return
    if isinstance(target, type):
        home = home or getattr(sys.modules.get(target.__module__), "__file__", None)
        for name, obj in vars(target).items():
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            elif isinstance(obj, property):
                for f in (obj.fget, obj.fset, obj.fdel):
                    if f is not None:
                        _code_objects(f, found, f"{label}.{name}", home)
                continue
            if isinstance(obj, (types.FunctionType, type)) or hasattr(obj, "__wrapped__"):
                _code_objects(obj, found, f"{label}.{name}", home)
        return
    try:
        target = inspect.unwrap(getattr(target, "__func__", target))  # through functools.wraps
    except ValueError:  # a __wrapped__ cycle
        pass
    code = getattr(target, "__code__", None)
    if isinstance(code, types.CodeType):
        if home is not None and code.co_filename != home:
            return
        stack = [code]
        while stack:
            c = stack.pop()
            found.setdefault(c, label)
            stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    elif callable(target) and home is None:  # a builtin (C) function, recognised by identity
        found.setdefault(target, label)


_type_name = type.__dict__["__name__"].__get__         # a metaclass cannot lie about these
_type_module = type.__dict__["__module__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__


def _whose(package: str) -> str:
    return package + ("'" if package.endswith("s") else "'s")


def _package_of(name: Any, packages: tuple[str, ...]) -> str | None:
    if type(name) is not str:
        return None
    return next((p for p in packages if name == p or name.startswith(p + ".")), None)


def _compiled_owners(packages: tuple[str, ...]) -> tuple[dict, dict]:
    """What compiled code of the packages (``tiktoken``: its Rust core) a C call can belong to:
    ``{id: (module, package)}`` of their loaded modules and ``{id: (type, package)}`` of the types
    those modules hold (found by membership: tiktoken's ``CoreBPE`` says its ``__module__`` is
    ``builtins``)."""
    modules: dict = {}
    kinds: dict = {}
    # every graded call asks this of thousands of loaded modules: their names are filtered in C
    loaded = dict(sys.modules)
    names = list(loaded)
    try:
        near = list(itertools.compress(names, map(str.startswith, names, itertools.repeat(packages))))
    except TypeError:       # a name that is not a str
        near = [n for n in names if type(n) is str and n.startswith(packages)]
    for name in near:
        m = loaded[name]
        package = _package_of(name, packages)
        if package is not None and m is not None:
            modules[id(m)] = (m, package)
            for v in list(getattr(m, "__dict__", {}).values()):
                # a type the package defines (not one it imported: str, Enum), compiled ones included
                where = _type_module(v) if isinstance(v, type) else None
                if where is not None and (_package_of(where, packages) is not None or (
                        where == "builtins" and getattr(builtins, _type_name(v), None) is not v)):
                    kinds.setdefault(id(v), (v, package))
    return modules, kinds


def _compiled_call(arg: Any, packages: tuple[str, ...], modules: dict, kinds: dict, verdicts: dict) -> str | None:
    """The label of a C call (``arg``: the builtin function or bound method the profile reports)
    that is the compiled code of one of ``packages``, or ``None``: a function of one of their
    modules, or a method defined by one of their types (called on an instance, a subclass's
    instance or the type itself). The verdict per type is cached in ``verdicts``."""
    owner = getattr(arg, "__self__", None)
    name = getattr(arg, "__name__", None)
    t = type(owner)
    if t is ModuleType:
        hit = modules.get(id(owner))
        return f"{_whose(hit[1])} compiled {getattr(owner, '__name__', '?')}.{name}" if hit is not None else None
    if isinstance(owner, type):       # a classmethod, a staticmethod, __new__: the type is the owner
        t = owner
    verdict = verdicts.get(id(t))
    if verdict is None:               # the classes of t's MRO that are the packages' ({id: package})
        ours = {}
        for c in _type_mro(t):
            package = kinds[id(c)][1] if id(c) in kinds else _package_of(_type_module(c), packages)
            if package is not None:
                ours[id(c)] = package
        verdicts[id(t)] = verdict = (t, ours)      # (t kept alive: its id stays its own)
    if not verdict[1] or type(name) is not str:
        return None
    for c in _type_mro(t):            # the class that defines the method: is it one of the packages'?
        if name in _type_dict(c):
            package = verdict[1].get(id(c))
            return f"{_whose(package)} compiled {_type_name(c)}.{name}" if package is not None else None
    return None


@contextlib.contextmanager
def forbid_calls(*targets: Any, reason: str = "a graded answer must be your own code", packages: tuple[str, ...] = ()):
    """Within the block, running the code of any target raises :class:`CheckFailed`, however the
    code was reached: the original name, an alias (``from m import f as g``), a reference saved
    before the block, a subclass, an instance made earlier. A target is a function, a class
    (every function in its body) or a module (every function and class defined in it).
    ``packages`` (installed packages, e.g. ``("tiktoken",)``): their compiled code is refused too,
    a C function of one of their loaded modules or a C method defined by a type one of them
    holds (tiktoken's ``CoreBPE.encode``, on an object made before the block or inside it).

    It watches what runs (a ``sys.setprofile`` hook on code objects), not names, so rebinding
    cannot get around it. A call is also remembered, and the block raises on exit if the student
    code caught the first error and carried on. A compiled call of ``packages`` is noted and fails
    the block when it ends. (Compiled code reached only from other compiled code,
    ``map(core.encode, texts)``, and a compiled type's constructor raise no profile event.)
    """
    with watch(targets, tuple(packages), (), (), reason):
        yield


_IMPORTING = ("_find_and_load", "<frozen importlib._bootstrap>")


def _library_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    # where each installed library's files lie, found without importing it
    dirs = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for d in (spec.submodule_search_locations or []) if spec is not None else []:
            dirs += [os.path.join(d, ""), os.path.join(os.path.realpath(d), "")]
    return tuple(dict.fromkeys(dirs))


def _importing(frame) -> bool:
    # a library's code called by the import system (its import-time code, or a finder it put on
    # sys.meta_path asked about a module imported inside the graded call) computes no answer
    while frame is not None:
        if (frame.f_code.co_name, frame.f_code.co_filename) == _IMPORTING:
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def watch(targets: tuple, packages: tuple[str, ...], torch_names: tuple[str, ...], libraries: tuple[str, ...],
           reason: str, extra: tuple[tuple[tuple, str], ...] = ()):
    """The rules that watch what runs, in one ``sys.setprofile`` function: the code of ``targets`` and the
    compiled code of ``packages`` (:func:`forbid_calls`), a torch function whose name holds one of
    ``torch_names`` reached straight from Python (:func:`own_code`), any Python code of the installed
    ``libraries`` but what the import system runs (:func:`lmcourse.marking.rules.forbid_library_code`).
    One function, because chained ones each paid a Python call on every call and return of the block,
    and a graded call spent most of its time in them. A refused call or library function raises at
    once and is remembered; a torch function and a package's compiled call are remembered (an error
    raised on the student's own frame would switch the profile off: CPython's answer to a failing
    profile); the block raises on exit (a library's code first, then a refused call, then a torch
    function). ``extra``: ``(targets, reason)`` pairs, more code refused with a reason of its own, in the
    same function (each profile function chained before another costs every event a Python call)."""
    codes: dict = {}             # a target's code object (or C function) -> (its label, the reason it is refused)
    for group, why in ((targets, reason), *extra):
        found: dict = {}
        for t in group:
            _code_objects(t, found, getattr(t, "__qualname__", getattr(t, "__name__", repr(t))))
        for k, label in found.items():
            codes.setdefault(k, (label, why))
    dirs = _library_dirs(libraries)
    if not (codes or packages or torch_names or dirs):
        yield
        return
    # the targets' C functions apart: a C call is hashed against them only when there are some
    c_targets = {k: v for k, v in codes.items() if type(k) is not CodeType}
    modules, kinds = _compiled_owners(packages) if packages else ({}, {})
    verdicts: dict = {}          # per type: which of its classes are the packages' (_compiled_call)
    # (file, first line) -> ((label, reason) among the targets', in a library, a torch op's __call__, the code
    # object): asked once per code object, the verdict kept only for that very object. Not keyed by id(): id() and
    # frame.f_code each raise an audit event, which calls every audit hook of the kernel in Python, and a "call"
    # already pays one for f_code; not by the code object, whose hash is computed anew each time from its constants
    seen: dict = {}
    package_modules = {m for m, _ in modules.values() if type(m) is ModuleType}   # these hash by identity
    clean: set = set()           # types none of whose classes are the packages' (verdicts, read without id())
    named: dict = {}             # a C function's name -> whether it holds one of torch_names
    called: list[tuple] = []     # refused calls (forbid_calls): (label, reason)
    torch_seen: list[str] = []   # torch functions reached straight from Python (own_code)
    library_seen: list[str] = []  # a library's code (rules.forbid_library_code)
    previous = sys.getprofile()
    compiled_call, importing, str_, type_, id_, module_type = _compiled_call, _importing, str, type, id, ModuleType
    torch_owns, aten_op_name = _torch_owns, _aten_op_name

    # every event of the block comes here, half of them returns: those leave after two comparisons
    def _profile(frame, event, arg):
        if event == "c_call":
            label = None
            if c_targets:
                try:
                    label = c_targets.get(arg)
                except TypeError:       # an unhashable callable is none of the targets
                    pass
            if label is None and packages:
                # most C calls are a builtin module's function or a method of a type already judged none of
                # the packages': those are told here, without a Python call (_compiled_call decides the rest)
                owner = getattr(arg, "__self__", None)
                kind = type_(owner)
                if kind is module_type:
                    suspect = owner in package_modules
                else:   # a class whose metaclass is type hashes by identity: no code of the student's runs here
                    suspect = type_(kind) is not type_ or kind not in clean
                if suspect:
                    compiled = compiled_call(arg, packages, modules, kinds, verdicts)
                    if compiled is not None:
                        called.append((compiled, reason))
                    elif kind is not module_type and type_(kind) is type_ and not issubclass(kind, type_) \
                            and not verdicts[id_(kind)][1]:
                        clean.add(kind)     # an instance's type (a class's methods are judged by the class)
            if label is None and torch_names:
                name = getattr(arg, "__name__", None)
                hit = named.get(name) if type_(name) is str_ else False
                if hit is None:
                    hit = named[name] = any(s in name for s in torch_names)
                if hit and torch_owns(arg):
                    torch_seen.append(arg.__name__)
            if previous is not None:
                previous(frame, event, arg)
            if label is not None:
                called.append(label)
                raise CheckFailed(f"your code called {label[0]}: {label[1]}")
        elif event == "call":
            code = frame.f_code
            key = (code.co_filename, code.co_firstlineno)     # hashed at a fraction of a code object's cost
            known = seen.get(key)
            if known is None or known[3] is not code:   # two code objects may start on one line, or be equal
                known = seen[key] = (codes.get(code), bool(dirs) and code.co_filename.startswith(dirs),
                                     bool(torch_names) and code.co_name == "__call__", code)
            label = known[0]
            if label is None and known[2]:
                name = aten_op_name(frame, torch_names)
                if name is not None:
                    torch_seen.append(name)
            if previous is not None:
                previous(frame, event, arg)
            if label is not None:
                called.append(label)
                raise CheckFailed(f"your code called {label[0]}: {label[1]}")
            if known[1] and not importing(frame.f_back):
                where = code.co_filename
                lib = next((n for n in libraries if f"{os.sep}{n}{os.sep}" in where), "a library")
                owner = lib + ("'" if lib.endswith("s") else "'s")
                library_seen.append(f"{owner} {code.co_qualname} ({os.path.basename(where)})")
                raise CheckFailed(f"your code ran {library_seen[-1]}: another library's code does not count "
                                         f"as yours inside a graded answer — {reason}")
        elif previous is not None:
            previous(frame, event, arg)

    sys.setprofile(_profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
    if library_seen:
        raise CheckFailed(f"your code ran {library_seen[0]}: another library's code does not count as yours "
                                 f"inside a graded answer — {reason}")
    if called:
        raise CheckFailed(f"your code called {called[0][0]}: {called[0][1]}")
    if torch_seen:
        raise CheckFailed(f"your code called torch.{torch_seen[0]}: {reason}")


@contextlib.contextmanager
def substitute(namespace: dict, **objects: Any):
    """Within the block, ``namespace[name]`` is ``objects[name]``; afterwards every name is bound
    as before (or unbound again). A test cell runs a student's function with the reference
    versions of the earlier graded functions it calls (``substitute(globals(), pad_sentence=ref)``)
    so that a slip in an earlier exercise costs its own points only."""
    missing = object()
    saved = {name: namespace.get(name, missing) for name in objects}
    namespace.update(objects)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = old


@contextlib.contextmanager
def own_code(*torch_names: str, calls: tuple = (), reason: str = "a graded answer must be your own code"):
    """The rules of a graded answer, enforced by what runs. Within the block:

    * no torch function whose name contains one of ``torch_names`` runs, however it is reached
      (:func:`forbid_torch_functions`; e.g. ``own_code("softmax")`` blocks ``torch.softmax``,
      ``x.softmax``, ``F.softmax``, ``nn.Softmax``, ``x.log_softmax(d).exp()``, ``torch._softmax``,
      ``torch.special.softmax``), and a call to such a function straight from Python is noticed
      even with torch's function modes switched off (``torch._C.DisableTorchFunction``);
    * none of the code of ``calls`` runs (:func:`forbid_calls`: the course's reference held under
      any name).
    """
    with forbid_torch_functions(*torch_names, reason=reason), watch(tuple(calls), (), torch_names, (), reason):
        yield


def _torch_owns(arg: Any) -> bool:
    """Whether a C function (a profile's ``c_call`` argument) is torch's: its module, or its owner's."""
    owner = getattr(arg, "__self__", None)
    where = [getattr(arg, "__module__", None), type(owner).__module__,
             getattr(owner, "__module__", None), getattr(owner, "__name__", None)]
    return any(isinstance(w, str) and w.startswith("torch") for w in where)


def _aten_op_name(frame, torch_names: tuple[str, ...]) -> str | None:
    """The name of the torch op a ``__call__`` frame runs (``torch.ops.aten.X.default(...)``), when
    it holds one of ``torch_names``."""
    op = frame.f_locals.get("self")
    name = getattr(op, "__name__", "")
    if type(op).__module__ == "torch._ops" and isinstance(name, str) and any(s in name for s in torch_names):
        return name
    return None


def python_decompositions(*name_substrings: str) -> tuple:
    """torch's own versions of operations written in Python (``torch._refs``, ``torch._decomp``)
    whose names contain one of ``name_substrings``, unwrapped: pass them to :func:`forbid_calls`
    so that a graded answer cannot reach a ready-made operation through them."""
    import inspect

    import torch._decomp.decompositions
    import torch._refs
    import torch._refs.nn.functional

    found = []
    for module in (torch._refs, torch._refs.nn.functional, torch._decomp.decompositions):
        for name, obj in vars(module).items():
            if callable(obj) and any(s in name for s in name_substrings):
                found.append(inspect.unwrap(obj))
    return tuple(found)


@contextlib.contextmanager
def forbid_kernels(*name_substrings: str, reason: str = "a graded answer must be your own code"):
    """Within the block, no ATen kernel whose name contains one of ``name_substrings`` runs: a
    ``TorchDispatchMode`` refuses it at the dispatcher, where every route ends (TorchScript and
    other compiled code included). A refusal is remembered, so catching the error does not help:
    the block raises on exit."""
    from torch.utils._python_dispatch import TorchDispatchMode

    refused: list[str] = []

    verdicts: dict = {}     # kernel -> whether it is refused: every kernel of the block asks

    class _Refuse(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):   # never compiled: left True, torch imports torch._dynamo to wrap it
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            bad = verdicts.get(func)
            if bad is None:
                bad = verdicts[func] = any(s in func.__name__ for s in name_substrings)
            if bad:
                refused.append(func.__name__)
                raise CheckFailed(f"your code ran torch's {func.__name__}: {reason}")
            return func(*args, **(kwargs or {}))

    with _Refuse():
        yield
    if refused:
        raise CheckFailed(f"your code ran torch's {refused[0]}: {reason}")


@contextlib.contextmanager
def forbid_references(*targets: Any, allowed: tuple = (), modules: tuple[str, ...] = (),
                      packages: tuple[str, ...] = (), reason: str = "a graded answer must be your own code"):
    """The rules a test cell states once for all its checks: within the block, the code of every
    target but those in ``allowed`` (the stand-ins the test itself runs) is refused as
    :func:`forbid_calls` refuses it, and so is every module named in ``modules`` that is imported
    already, and the compiled code of ``packages`` (:func:`forbid_calls`'s ``packages``: a method of
    tiktoken's Rust core, called on an object made before the block or inside it); a package of
    ``packages`` first imported inside the block fails the test on exit
    (``forbid_references(*lmcourse.reference.decoding.REFERENCE, allowed=(ref.sample_next,),
    modules=("transformers.generation.utils",), packages=("transformers",), reason=...)``)."""
    import sys

    refused = [t for t in targets if t not in allowed]
    refused += [sys.modules[m] for m in modules if m in sys.modules]
    had = {p for p in packages if p in sys.modules}
    with forbid_calls(*refused, reason=reason, packages=packages):
        yield
    for p in packages:
        check(p in had or p not in sys.modules, f"your code imported {p}: {reason}")
