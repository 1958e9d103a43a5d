"""The rules of a graded call, made by one call in a test cell.

A test cell states an exercise's rules once and runs the student's function under them::

    _rules = rules(ref.count_ngrams, substitute={"pad_sentence": ref.pad_sentence}, namespace=globals())
    with _rules():
        got = count_ngrams(toy, 2)

Within the block (see :class:`Rules`): the earlier graded functions are the reference ones (one
mistake costs once), none of the code of ``references`` runs however it is reached, and no torch
function (or compiled kernel) whose name contains one of ``torch`` (``kernels``) runs. The
primitives live in :mod:`lmcourse.checks`; this module only composes them, so the graded-call
context has one home: :meth:`Rules.__enter__`.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from lmcourse import checks, confine

__all__ = ["OWN", "Rules", "rules"]

OWN = "a graded answer must be your own code"


class Rules:
    """One exercise's rules, entered as often as the test cell needs (``with r():`` or ``with r:``)."""

    def __init__(self, references: tuple, torch: tuple[str, ...] = (), kernels: tuple[str, ...] = (),
                 substitute: dict[str, Any] | None = None, namespace: dict | None = None, reason: str = OWN,
                 modules: tuple[str, ...] = (), packages: tuple[str, ...] = (), allowed: tuple = ()):
        if substitute and namespace is None:
            raise TypeError("rules(substitute=...) needs namespace=globals(): where the stand-ins go")
        self.references, self.torch, self.kernels = references, torch, kernels
        self.substitute, self.namespace, self.reason = dict(substitute or {}), namespace, reason
        self.modules, self.packages, self.allowed = modules, packages, allowed
        self._open: list[contextlib.ExitStack] = []

    def __call__(self, *allowed: Any) -> Rules:
        """These rules, or with ``allowed`` (references the test itself runs as stand-ins) let through."""
        if not allowed:
            return self
        return Rules(self.references, self.torch, self.kernels, self.substitute, self.namespace, self.reason,
                     self.modules, self.packages, self.allowed + allowed)

    def __enter__(self) -> Rules:
        """The graded-call context: every rule a graded call runs under is entered here, and only here."""
        stack = contextlib.ExitStack()
        with stack:     # a rule that fails to start leaves the ones before it undone
            if self.substitute:
                stack.enter_context(checks.substitute(self.namespace, **self.substitute))
            # torch names and modules / packages / stand-ins combine: each rule stated is entered
            wider = bool(self.modules or self.packages or self.allowed)
            if self.torch:
                stack.enter_context(checks.own_code(*self.torch, calls=() if wider else self.references,
                                                    reason=self.reason))
            if wider:
                stack.enter_context(checks.forbid_references(*self.references, allowed=self.allowed,
                                                             modules=self.modules, packages=self.packages,
                                                             reason=self.reason))
            elif not self.torch:
                stack.enter_context(checks.forbid_calls(*self.references, reason=self.reason))
            if self.kernels:
                stack.enter_context(checks.forbid_kernels(*self.kernels, reason=self.reason))
            # the rules above watch this thread: no other thread or process, no copy of course source
            stack.enter_context(confine.graded_call(sys._getframe(1)))
            self._open.append(stack.pop_all())
        return self

    def __exit__(self, *exc) -> bool:
        return self._open.pop().__exit__(*exc)


def rules(*references: Any, torch: tuple[str, ...] = (), kernels: tuple[str, ...] = (),
          substitute: dict[str, Any] | None = None, namespace: dict | None = None, reason: str = OWN,
          modules: tuple[str, ...] = (), packages: tuple[str, ...] = ()) -> Rules:
    """The rules of an exercise: ``references`` (functions, classes, modules: the course code that
    does the exercise's work) must not run; ``torch`` / ``kernels``: name parts of torch functions
    / compiled kernels that must not run; ``substitute``: names bound in ``namespace`` (the
    notebook's ``globals()``) to reference versions for the block; ``modules``: modules whose
    code must not run either (when imported already), ``packages``: packages that must not be
    imported inside the block; ``reason``: the end of the message a broken rule raises.
    ``rules(...)(*allowed)`` lets the stand-ins in ``allowed`` through."""
    return Rules(references, tuple(torch), tuple(kernels), substitute, namespace, reason, tuple(modules),
                 tuple(packages))
