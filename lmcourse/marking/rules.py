"""The rules of a graded call, made by one call in an exercise's spec.

An exercise of a notebook's marking module states its rules once, ``Exercise(..., rules=...)``: a
function that returns :func:`rules`'s result, which the kernel (:class:`lmcourse.marking.Exam`)
enters around each of the exercise's cases while the student's code runs.

Within the block (see :class:`Rules`): the earlier graded functions are the reference ones (one
mistake costs once), none of the code of ``references`` runs however it is reached, no torch
function (or compiled kernel) whose name contains one of ``torch`` (``kernels``) runs, and no
Python code of the libraries in ``libraries`` (by default :data:`LIBRARIES`) runs: a library's own
implementation of an exercise (transformers' ``VitDetLayerNorm.forward`` for a layer norm) is
refused wherever in the library it lives. The primitives live in :mod:`lmcourse.marking.refusals`; this
module composes them (the ones that watch what runs are one profile function,
:func:`refusals.watch`), so the graded-call context has one home: :meth:`Rules.__enter__`.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lmcourse import checks
from lmcourse.marking import confine, refusals

__all__ = ["LIBRARIES", "OWN", "Later", "Rules", "course", "exercise_rules", "forbid_library_code", "rules"]

OWN = "a graded answer must be your own code"
# libraries whose Python code never runs inside a graded call: each holds its own version of
# most exercises of the course (layer norms, GPT-2, samplers, beam search), written in Python
LIBRARIES = ("transformers",)


def forbid_library_code(*names: str, reason: str = OWN):
    """Within the block, running any Python function whose file lies in one of the libraries
    ``names`` (installed packages, e.g. ``"transformers"``) raises :class:`checks.CheckFailed`,
    however the function was reached; code the import system runs is let through. Like
    :func:`refusals.forbid_calls`, a refusal the student code caught still fails on exit."""
    return refusals.watch((), (), (), tuple(names), reason)


class Rules:
    """One exercise's rules, entered as often as the test cell needs (``with r():`` or ``with r:``)."""

    def __init__(self, references: tuple, torch: tuple[str, ...] = (), kernels: tuple[str, ...] = (),
                 substitute: dict[str, Any] | None = None, namespace: dict | None = None, reason: str = OWN,
                 modules: tuple[str, ...] = (), packages: tuple[str, ...] = (), allowed: tuple = (),
                 libraries: tuple[str, ...] = LIBRARIES, extra: tuple[tuple[tuple, str], ...] = ()):
        if substitute and namespace is None:
            raise TypeError("rules(substitute=...) needs namespace=globals(): where the stand-ins go")
        self.references, self.torch, self.kernels = references, torch, kernels
        self.substitute, self.namespace, self.reason = dict(substitute or {}), namespace, reason
        self.modules, self.packages, self.allowed, self.libraries = modules, packages, allowed, libraries
        self.extra = extra      # (targets, reason) pairs: more course code refused, each with its own reason
        self._open: list[contextlib.ExitStack] = []

    def __call__(self, *allowed: Any) -> Rules:
        """These rules, or with ``allowed`` (references the test itself runs as stand-ins) let through."""
        if not allowed:
            return self
        return Rules(self.references, self.torch, self.kernels, self.substitute, self.namespace, self.reason,
                     self.modules, self.packages, self.allowed + allowed, self.libraries, self.extra)

    def __enter__(self) -> Rules:
        """The graded-call context: every rule a graded call runs under is entered here, and only here."""
        stack = contextlib.ExitStack()
        with stack:     # a rule that fails to start leaves the ones before it undone
            if self.substitute:
                stack.enter_context(refusals.substitute(self.namespace, **self.substitute))
            # torch names and modules / packages / stand-ins combine: each rule stated is entered, the ones
            # that watch what runs in one profile function (refusals.watch)
            if self.torch:
                stack.enter_context(refusals.forbid_torch_functions(*self.torch, reason=self.reason))
            if self.kernels:
                stack.enter_context(refusals.forbid_kernels(*self.kernels, reason=self.reason))
            refused = [t for t in self.references if t not in self.allowed]
            refused += [sys.modules[m] for m in self.modules if m in sys.modules]
            stack.enter_context(self._no_new_package())
            extra = tuple((tuple(t for t in targets if t not in self.allowed), why) for targets, why in self.extra)
            stack.enter_context(refusals.watch(tuple(refused), self.packages, self.torch, self.libraries, self.reason,
                                               extra))
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
          libraries: tuple[str, ...] = LIBRARIES, extra: tuple[tuple[tuple, str], ...] = ()) -> Rules:
    """The rules of an exercise: ``references`` (functions, classes, modules: the course code that
    does the exercise's work) must not run; ``torch`` / ``kernels``: name parts of torch functions
    / compiled kernels that must not run; ``substitute``: names bound in ``namespace`` (the
    notebook's ``globals()``) to reference versions for the block; ``modules``: modules whose
    code must not run either (when imported already), ``packages``: packages that must not be
    imported inside the block; ``libraries``: installed libraries none of whose Python code may run
    (default :data:`LIBRARIES`; ``()`` for none); ``reason``: the end of the message a broken rule
    raises; ``extra``: ``(references, reason)`` pairs refused with a reason of their own.
    ``rules(...)(*allowed)`` lets the stand-ins in ``allowed`` through."""
    return Rules(references, tuple(torch), tuple(kernels), substitute, namespace, reason, tuple(modules),
                 tuple(packages), libraries=tuple(libraries), extra=tuple(extra))


@dataclass(frozen=True)
class Later:
    """Targets found when a case starts: ``make()`` returns them (what only a kernel's modules can say)."""
    make: Callable[[], Iterable[Any]]


def course(path: str) -> tuple:
    """``"module"`` or ``"module:name"`` (``name`` a dotted attribute chain): the module or the object, in a
    one-tuple; ``()`` where the kernel cannot import the module (a graded kernel withholds the code that
    does its notebook's work: nothing of it to refuse there). A name the module lacks is an error."""
    module, _, attribute = path.partition(":")
    try:
        found: Any = importlib.import_module(module)
    except ImportError:
        return ()
    for part in filter(None, attribute.split(".")):
        found = getattr(found, part)
    return (found,)


def _resolved(targets: Iterable[Any]) -> tuple:
    found: list[Any] = []
    for target in targets:
        if type(target) is str:
            found.extend(course(target))
        elif type(target) is Later:
            found.extend(target.make())
        else:
            found.append(target)
    return tuple(found)


def exercise_rules(reason: str = OWN, *targets: Any, torch: tuple[str, ...] = (), kernels: tuple[str, ...] = (),
                   modules: tuple[str, ...] = (), packages: tuple[str, ...] = (),
                   libraries: tuple[str, ...] = LIBRARIES,
                   extra: tuple[tuple[tuple, str], ...] = ()) -> Callable[[], Rules]:
    """An exercise's rules as its spec states them (``Exercise(..., rules=exercise_rules(...))``), made each
    time a case starts, so that nothing is imported before: ``targets`` are objects, :func:`course` paths
    or :class:`Later`; ``extra`` pairs targets of the same kinds with a reason of their own; the rest is
    :func:`rules`'s."""
    def make() -> Rules:
        return rules(*_resolved(targets), torch=torch, kernels=kernels, reason=reason, modules=modules,
                     packages=packages, libraries=libraries,
                     extra=tuple((_resolved(more), why) for more, why in extra))
    return make
