"""The rules of a graded call, made by one call in a test cell.

A test cell states an exercise's rules once and runs the student's function under them::

    _rules = rules(ref.count_ngrams, substitute={"pad_sentence": ref.pad_sentence}, namespace=globals())
    with _rules():
        got = count_ngrams(toy, 2)

Within the block (see :class:`Rules`): the earlier graded functions are the reference ones (one
mistake costs once), none of the code of ``references`` runs however it is reached, no torch
function (or compiled kernel) whose name contains one of ``torch`` (``kernels``) runs, and no
Python code of the libraries in ``libraries`` (by default :data:`LIBRARIES`) runs: a library's own
implementation of an exercise (transformers' ``VitDetLayerNorm.forward`` for a layer norm) is
refused wherever in the library it lives. The primitives live in :mod:`lmcourse.marking.refusals`; this
module composes them, the ones that watch what runs in one profile function (:func:`_watch`, which
:func:`forbid_library_code` is too), so the graded-call context has one home: :meth:`Rules.__enter__`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from typing import Any

from lmcourse import checks
from lmcourse.marking import confine, refusals

__all__ = ["LIBRARIES", "OWN", "Rules", "forbid_library_code", "rules"]

OWN = "a graded answer must be your own code"
# libraries whose Python code never runs inside a graded call: each holds its own version of
# most exercises of the course (layer norms, GPT-2, samplers, beam search), written in Python
LIBRARIES = ("transformers",)
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


def forbid_library_code(*names: str, reason: str = OWN):
    """Within the block, running any Python function whose file lies in one of the libraries
    ``names`` (installed packages, e.g. ``"transformers"``) raises :class:`checks.CheckFailed`,
    however the function was reached; code the import system runs is let through. Like
    :func:`refusals.forbid_calls`, a refusal the student code caught still fails on exit."""
    return _watch((), (), (), tuple(names), reason)


@contextlib.contextmanager
def _watch(targets: tuple, packages: tuple[str, ...], torch_names: tuple[str, ...], libraries: tuple[str, ...],
           reason: str):
    """What :func:`refusals.forbid_calls` (``targets``, ``packages``), the profile half of
    :func:`refusals.own_code` (``torch_names``) and :func:`forbid_library_code` (``libraries``) refuse,
    watched by one profile function. Chained one on another, each paid a Python call on every call and
    return of the block, and a graded call spent most of its time in them; refused and reported the
    same way: a refused call raises at once and is remembered; a torch function reached from Python
    and a package's compiled call are remembered; the block raises on exit (a library's code first,
    then a refused call, then a torch function)."""
    codes: dict = {}
    for t in targets:
        refusals._code_objects(t, codes, getattr(t, "__qualname__", getattr(t, "__name__", repr(t))))
    dirs = _library_dirs(libraries)
    if not (codes or packages or torch_names or dirs):
        yield
        return
    modules, kinds = refusals._compiled_owners(packages) if packages else ({}, {})
    verdicts: dict = {}          # per type: which of its classes are the packages' (refusals._compiled_call)
    in_library: dict = {}        # code object -> whether its file lies in one of the libraries
    named: dict = {}             # a C function's name -> whether it holds one of torch_names
    called: list[str] = []       # refused calls (refusals.forbid_calls)
    torch_seen: list[str] = []   # torch functions reached straight from Python (refusals.own_code)
    library_seen: list[str] = []  # a library's code (forbid_library_code)
    previous = sys.getprofile()
    compiled_call, importing, str_, type_ = refusals._compiled_call, _importing, str, type
    torch_owns, aten_op_name = refusals._torch_owns, refusals._aten_op_name

    def _profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            label = codes.get(code)
            if label is None and torch_names and code.co_name == "__call__":
                name = aten_op_name(frame, torch_names)
                if name is not None:
                    torch_seen.append(name)
        elif event == "c_call":
            try:
                label = codes.get(arg)
            except TypeError:       # an unhashable callable is none of the targets
                label = None
            if label is None and packages:
                compiled = compiled_call(arg, packages, modules, kinds, verdicts)
                if compiled is not None:
                    called.append(compiled)
            if label is None and torch_names:
                name = getattr(arg, "__name__", None)
                hit = named.get(name) if type_(name) is str_ else False
                if hit is None:
                    hit = named[name] = any(s in name for s in torch_names)
                if hit and torch_owns(arg):
                    torch_seen.append(arg.__name__)
        else:
            label = None
        if previous is not None:
            previous(frame, event, arg)
        if label is not None:
            called.append(label)
            raise checks.CheckFailed(f"your code called {label}: {reason}")
        if event == "call" and dirs:
            code = frame.f_code
            inside = in_library.get(code)
            if inside is None:
                inside = in_library[code] = code.co_filename.startswith(dirs)
            if inside and not importing(frame.f_back):
                where = code.co_filename
                lib = next((n for n in libraries if f"{os.sep}{n}{os.sep}" in where), "a library")
                owner = lib + ("'" if lib.endswith("s") else "'s")
                library_seen.append(f"{owner} {code.co_qualname} ({os.path.basename(where)})")
                raise checks.CheckFailed(f"your code ran {library_seen[-1]}: another library's code does not count "
                                         f"as yours inside a graded answer — {reason}")

    sys.setprofile(_profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
    if library_seen:
        raise checks.CheckFailed(f"your code ran {library_seen[0]}: another library's code does not count as yours "
                                 f"inside a graded answer — {reason}")
    if called:
        raise checks.CheckFailed(f"your code called {called[0]}: {reason}")
    if torch_seen:
        raise checks.CheckFailed(f"your code called torch.{torch_seen[0]}: {reason}")


class Rules:
    """One exercise's rules, entered as often as the test cell needs (``with r():`` or ``with r:``)."""

    def __init__(self, references: tuple, torch: tuple[str, ...] = (), kernels: tuple[str, ...] = (),
                 substitute: dict[str, Any] | None = None, namespace: dict | None = None, reason: str = OWN,
                 modules: tuple[str, ...] = (), packages: tuple[str, ...] = (), allowed: tuple = (),
                 libraries: tuple[str, ...] = LIBRARIES):
        if substitute and namespace is None:
            raise TypeError("rules(substitute=...) needs namespace=globals(): where the stand-ins go")
        self.references, self.torch, self.kernels = references, torch, kernels
        self.substitute, self.namespace, self.reason = dict(substitute or {}), namespace, reason
        self.modules, self.packages, self.allowed, self.libraries = modules, packages, allowed, libraries
        self._open: list[contextlib.ExitStack] = []

    def __call__(self, *allowed: Any) -> Rules:
        """These rules, or with ``allowed`` (references the test itself runs as stand-ins) let through."""
        if not allowed:
            return self
        return Rules(self.references, self.torch, self.kernels, self.substitute, self.namespace, self.reason,
                     self.modules, self.packages, self.allowed + allowed, self.libraries)

    def __enter__(self) -> Rules:
        """The graded-call context: every rule a graded call runs under is entered here, and only here."""
        stack = contextlib.ExitStack()
        with stack:     # a rule that fails to start leaves the ones before it undone
            if self.substitute:
                stack.enter_context(refusals.substitute(self.namespace, **self.substitute))
            # torch names and modules / packages / stand-ins combine: each rule stated is entered, the ones
            # that watch what runs in one profile function (_watch)
            if self.torch:
                stack.enter_context(refusals.forbid_torch_functions(*self.torch, reason=self.reason))
            if self.kernels:
                stack.enter_context(refusals.forbid_kernels(*self.kernels, reason=self.reason))
            refused = [t for t in self.references if t not in self.allowed]
            refused += [sys.modules[m] for m in self.modules if m in sys.modules]
            stack.enter_context(self._no_new_package())
            stack.enter_context(_watch(tuple(refused), self.packages, self.torch, self.libraries, self.reason))
            # the rules above watch this thread: no other thread or process, no copy of course source
            stack.enter_context(confine.graded_call(sys._getframe(1)))
            self._open.append(stack.pop_all())
        return self

    def __exit__(self, *exc) -> bool:
        return self._open.pop().__exit__(*exc)

    @contextlib.contextmanager
    def _no_new_package(self):
        # a package of `packages` first imported inside the block fails it (as refusals.forbid_references)
        had = {p for p in self.packages if p in sys.modules}
        yield
        for p in self.packages:
            checks.check(p in had or p not in sys.modules, f"your code imported {p}: {self.reason}")


def rules(*references: Any, torch: tuple[str, ...] = (), kernels: tuple[str, ...] = (),
          substitute: dict[str, Any] | None = None, namespace: dict | None = None, reason: str = OWN,
          modules: tuple[str, ...] = (), packages: tuple[str, ...] = (),
          libraries: tuple[str, ...] = LIBRARIES) -> Rules:
    """The rules of an exercise: ``references`` (functions, classes, modules: the course code that
    does the exercise's work) must not run; ``torch`` / ``kernels``: name parts of torch functions
    / compiled kernels that must not run; ``substitute``: names bound in ``namespace`` (the
    notebook's ``globals()``) to reference versions for the block; ``modules``: modules whose
    code must not run either (when imported already), ``packages``: packages that must not be
    imported inside the block; ``libraries``: installed libraries none of whose Python code may run
    (default :data:`LIBRARIES`; ``()`` for none); ``reason``: the end of the message a broken rule
    raises. ``rules(...)(*allowed)`` lets the stand-ins in ``allowed`` through."""
    return Rules(references, tuple(torch), tuple(kernels), substitute, namespace, reason, tuple(modules),
                 tuple(packages), libraries=tuple(libraries))
