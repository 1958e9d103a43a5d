"""What the build writes into a hidden test's ``tests.grade("x")`` line, and takes out again.

In a notebook graded from records the line becomes ``tests.grade("x", standins="...",
hidden="...")``: the stand-ins' code (:mod:`.standins`, only for an exercise that names some) and
the exercise's own hidden cases (:mod:`.hidden_source`), as text compiled when the line runs. Both
exist in a graded kernel only from that test cell on. The student's release has no hidden tests,
so none of this text; the solution notebook drops it (:func:`strip`) and imports the modules.
"""

from __future__ import annotations

import re

from .hidden_source import hidden_source
from .spec import Notebook
from .standins import standin_source

__all__ = ["inline", "strip"]

_GRADE = re.compile(r'^([ \t]*\w+\.grade\("(\w+)")(\))[ \t]*$', re.M)
# the keywords are one line each: repr() escapes every newline of the text it quotes
_INLINED = re.compile(r'^([ \t]*\w+\.grade\("\w+"), (?:standins|hidden)=.*\)[ \t]*$', re.M)


def inline(source: str, notebook: Notebook) -> str:
    """A test cell's source with its exercise's stand-ins (where it names some) and hidden cases
    written into each ``X.grade("name")`` line."""
    def add(m: re.Match) -> str:
        ex = notebook.exercise(m.group(2))
        standins = f", standins={standin_source(notebook, ex.name)!r}" if ex.standins else ""
        return f"{m.group(1)}{standins}, hidden={hidden_source(notebook, ex.name)!r})"
    return _GRADE.sub(add, source)


def strip(source: str) -> str:
    """The inverse of :func:`inline`, for the solution notebook (which imports the reference and
    the hidden module)."""
    return _INLINED.sub(lambda m: m.group(1) + ")", source)
