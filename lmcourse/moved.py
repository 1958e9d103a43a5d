"""Names that moved, still found where they were.

Notebooks in students' hands, ``lmcourse train`` and code written against older versions of the
course read some names from the module they first lived in; the notebooks' answers have since moved
to ``lmcourse.reference`` (absent while their notebook is graded). A module keeps those old names
working, with a deprecation warning naming the new home, by binding :func:`read_through`'s result as
its module ``__getattr__`` (PEP 562).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable

__all__ = ["read_through", "answers_or_nothing"]


def read_through(module: str, target: str, names: Iterable[str] | None = None,
                 also: Callable[[str], object] | None = None) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``module``: each of ``names`` (every name but dunders when
    ``None``: a whole module that moved) is read from ``target``, with a DeprecationWarning;
    ``also(name)`` answers first where given (it raises AttributeError to pass)."""
    moved = None if names is None else frozenset(names)

    def __getattr__(name: str):
        if also is not None:
            try:
                return also(name)
            except AttributeError:
                pass
        # dunders are Python's own questions (``from M import x`` asks for ``__path__``), not a reader's
        if (name in moved) if moved is not None else not name.startswith("__"):
            warnings.warn(f"{module}.{name} moved to {target}.{name}", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(target), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def answers_or_nothing(target: str) -> Callable[[str], object]:
    """For :func:`read_through`'s ``also``: ``REFERENCE`` is ``target``'s ``ANSWERS``, which other
    notebooks' rules refuse; where ``target`` is withheld there is nothing to refuse: ``()``."""

    def reference(name: str):
        if name != "REFERENCE":
            raise AttributeError(name)
        try:
            return importlib.import_module(target).ANSWERS
        except ImportError:
            return ()

    return reference
