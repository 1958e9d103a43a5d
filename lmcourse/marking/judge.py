"""The verdict: what the student's code returned (recorded, decoded) against the reference's value.

Used in two places with the same code: by the grader, in its own process, on the records a
graded notebook's test cells wrote (:mod:`.grader`); and at home, in the student's kernel, for
the visible cases (:mod:`.kernel`), where the expected values are as visible as the test itself.
:meth:`Outcome.text` is the one rendering of a graded outcome, whatever shows it (the graded
notebook's error output, the feedback page, ``grades.csv``, Gradescope's ``results.json``); at home the
kernel raises the same message as a :class:`~lmcourse.checks.CheckFailed`, which shows it with the
notebook's own lines that led to it.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any

from .plain import NotPlain, Raised, decode, encode, raised
from .show import show
from .spec import Case, Exercise, Names, exact

__all__ = ["Outcome", "expected_values", "judge_case", "judge_exercise", "observe"]

_UNDEFINED = re.compile(r"name '(\w+)' is not defined")


@dataclass(frozen=True)
class Outcome:
    exercise: str
    passed: bool
    checked: int                    # cases judged (all of them when it passed)
    label: str | None = None        # the first failing case
    message: str | None = None      # why it failed, naming the likely mistake where one is known
    hidden: bool = False            # the failing case is one of the hidden tests

    def text(self) -> str:
        if self.passed:
            return f"{self.exercise}: all {self.checked} checks pass"
        where = "a hidden test" if self.hidden else "a visible test"
        return f"{self.exercise}: {where} failed: {self.message}"


def observe(call, names: Names) -> Any:
    """Run ``call(names)`` and return its value as a plain-data tree (:func:`.plain.encode`), or the
    record of the error it raised."""
    try:
        return encode(call(names))
    except Exception as exc:        # the student's error is the observation, judged like a value
        return raised(exc)


def expected_values(module: str, cases: tuple[Case, ...]) -> list[Any]:
    """Each case's expected value, from the reference module's names (decoded plain data, as the
    student's side is)."""
    names = Names(vars(importlib.import_module(module)))
    return [decode(observe(case.expect or case.call, names)) for case in cases]


def judge_case(case: Case, got: Any, want: Any, graded: bool = False) -> str | None:
    """``None`` when ``got`` is right, else the message (the case's label first). ``graded``: the
    grader ran the whole notebook first, so a name not defined is an answer cell that did not define it."""
    label = case.label
    if type(want) is Raised:
        if type(got) is Raised and got.ename == want.ename:
            return None
        return f"{label} should raise {want.ename}, but it " + (
            f"raised {got.ename}: {got.message}" if type(got) is Raised else f"returned {show(got)}")
    if type(got) is Raised:
        # a stub's NotImplementedError, unless the case knows this message (torch raises one on a meta tensor)
        if got.unanswered and not any(text and text in got.message for text, _ in case.errors):
            return (f"{label} raised NotImplementedError: " + (got.message or "the exercise is not answered yet")
                    + " (or a function it calls is not answered yet)")
        undefined = _UNDEFINED.match(got.message) if graded and got.ename == "NameError" else None
        if undefined:
            return (f"{label} raised NameError: {undefined.group(1)} is not defined after every cell of the notebook "
                    "ran: the exercise that defines it is not answered yet (its cell still raises "
                    "NotImplementedError), or its cell raised an error")
        hint = next((h for text, h in case.errors if text in got.message),
                    case.hint if not case.errors and got.ename != "NameError" else None)
        return f"{label} raised {got.ename}: {got.message}" + (f" — {hint}" if hint else "")
    if type(got) is NotPlain:
        return (f"{label} returned {got.what}, which the grader does not read: return plain values "
                "(numbers, strings, lists, tuples, dicts, Counters, tensors)")
    for diagnose in case.diagnoses:
        try:
            found = diagnose(got, want)
        except Exception:           # a diagnosis meant for another shape of value says nothing
            found = None
        if found:
            return f"{label}: {found}"
    diff = (case.compare or exact())(got, want)
    if diff:
        return f"{label}: {diff}" + (f" — {case.hint}" if case.hint else "")
    return None


def judge_exercise(exercise: Exercise, cases: tuple[Case, ...], got: list[Any], want: list[Any],
                   n_visible: int, graded: bool = False) -> Outcome:
    """The exercise's outcome: every case must pass; the first that fails is named (cases before
    ``n_visible`` are the visible ones; ``graded``: as :func:`judge_case`)."""
    if len(got) != len(cases):
        return Outcome(exercise.name, False, 0, None,
                       f"the record holds {len(got)} results for {len(cases)} cases: the test did not run to its end")
    for i, (case, g, w) in enumerate(zip(cases, got, want)):
        message = judge_case(case, g, w, graded)
        if message:
            return Outcome(exercise.name, False, i, case.label, message, hidden=i >= n_visible)
    return Outcome(exercise.name, True, len(cases))
