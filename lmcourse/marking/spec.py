"""What a notebook's tests are, as data: cases, exercises, notebooks.

A :class:`Case` is one call of a student's function on the test's own inputs (``call``), and how
what came back is judged: a comparison with the reference's value on the same inputs (by
default ``call`` itself run on the reference's names), diagnoses that name a likely mistake, and
hints for errors. The same ``call`` runs the student's code in the kernel and the reference in
the judge, so the two can only differ by the code under test.

The comparisons and diagnoses are ordinary functions of ``(got, want)`` returning ``None`` when
they have nothing to say, else a sentence. They run where the verdict is made (never on a value
the student's code still holds: both sides are decoded plain data, :mod:`.plain`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from .show import show

__all__ = ["Case", "Exercise", "Names", "Notebook", "close", "dist_close", "exact", "multiple_choice", "question",
           "when"]

Compare = Callable[[Any, Any], "str | None"]
Diagnosis = Callable[[Any, Any], "str | None"]


class Names:
    """The names a case's ``call`` reads: the notebook's globals (the student's functions) or the
    reference's module (the judge's side). ``names.count_ngrams(...)``."""
    __slots__ = ("_mapping",)

    def __init__(self, mapping: Mapping[str, Any]):
        object.__setattr__(self, "_mapping", mapping)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._mapping[name]
        except KeyError:
            raise NameError(_not_defined(name, self._mapping)) from None


def _not_defined(name: str, mapping: Mapping[str, Any]) -> str:
    """NameError's text, with where the notebook defines the name when the notebook can be read
    (:func:`lmcourse.runtime.name_error_hint`, as a NameError in a cell of one's own gets)."""
    hint = None
    try:
        from lmcourse.runtime import name_error_hint, notebook_path

        hint = name_error_hint(name, notebook_path(dict(mapping)))
    except Exception:       # noqa: BLE001 (a notebook that cannot be read: the plain text)
        pass
    return f"name '{name}' is not defined. " + (hint or "Run the cell that defines it first")


@dataclass(frozen=True)
class Case:
    label: str                              # what a message calls it: "count_ngrams(toy, 2)"
    call: Callable[[Names], Any]            # the code under test on the test's inputs
    compare: Compare | None = None          # None: exact()
    hint: str | None = None                 # when the value differs and no diagnosis names why
    diagnoses: tuple[Diagnosis, ...] = ()   # checked in order before the comparison
    expect: Callable[[Names], Any] | None = None   # the expected value; None: call on the reference
    errors: tuple[tuple[str, str], ...] = ()       # (text in an error's message, what it likely means)


# slots: no instance dictionary, so nothing reached as ``vars(exercise)`` or a path ending in ``__dict__``
# rewrites an exercise's rules (the grader's text check and scan are the line that holds; this is a second)
@dataclass(frozen=True, slots=True)
class Exercise:
    name: str                                # the answer cell's grade id; its test cell adds "_tests"
    cases: tuple[Case, ...]                  # the visible cases (the hidden ones live apart)
    standins: tuple[str, ...] = ()           # earlier exercises answered by the reference here
    rules: Callable[[], AbstractContextManager] | None = None   # third-party equivalents refused
    answer: str | None = None                # the reference's name of the answer, when not ``name`` (a class)

    @property
    def test_id(self) -> str:
        return f"{self.name}_tests"


@dataclass(frozen=True, slots=True)
class Notebook:
    name: str                                # "01_ngram"
    reference: str                           # the module whose names answer the exercises
    hidden: str                              # the module whose HIDDEN maps exercise -> hidden cases
    exercises: tuple[Exercise, ...] = field(default_factory=tuple)
    # course modules that must not be importable in the grading kernel (the reference's, and any
    # other that does the same work); the stand-ins come from the reference's source instead
    withheld: tuple[str, ...] = ()
    # other notebooks' answers (lmcourse.reference.*) that this notebook's own cells run, e.g. 05's
    # ladder counts 01's n-grams: every other one is withheld too (lmcourse.marking.kernel.withhold)
    uses: tuple[str, ...] = ()

    def exercise(self, name: str) -> Exercise:
        for ex in self.exercises:
            if ex.name == name:
                return ex
        raise KeyError(f"notebook {self.name} has no exercise {name!r}")


# ---------------------------------------------------------------- comparisons

def _norm(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {k: _norm(v) for k, v in x.items()}
    if type(x) is list:
        return [_norm(v) for v in x]
    if type(x) is tuple:
        return tuple(_norm(v) for v in x)
    return x


def exact() -> Compare:
    """Equal values of the same kinds (any mapping equals a mapping of the same items; a list is
    not a tuple; 1 and 1.0 are equal, as in Python)."""
    def compare(got: Any, want: Any) -> str | None:
        if _kind(got) != _kind(want):
            return f"got {show(got)} ({_kind(got)}), expected {_kind(want)} {show(want)}"
        return None if _norm(got) == _norm(want) else f"got {show(got)}, expected {show(want)}"
    return compare


def _kind(x: Any) -> str:
    if isinstance(x, Mapping):
        return "a mapping"
    if type(x) in (int, float) or type(x) is bool:
        return "a number" if type(x) is not bool else "a bool"
    name = type(x).__name__
    return ("an " if name[:1] in "aeiou" else "a ") + name


def _num(x: Any) -> bool:
    return type(x) in (int, float)


def close(rel: float = 1e-9, abs_: float = 1e-12) -> Compare:
    """Numbers equal within ``rel`` / ``abs_`` (``math.isclose``), inside lists, tuples and
    mappings of the same keys; infinities must match exactly."""
    def compare(got: Any, want: Any, where: str = "") -> str | None:
        if _num(want):
            if not _num(got):
                return f"got {show(got)}{where}, expected a number close to {show(want)}"
            if math.isnan(got) or not math.isclose(got, want, rel_tol=rel, abs_tol=abs_):
                return f"got {show(got)}{where}, expected {show(want)}"
            return None
        if isinstance(want, Mapping):
            if not isinstance(got, Mapping):
                return f"got {show(got)}{where}, expected a mapping {show(want)}"
            if set(got) != set(want):
                extra, missing = set(got) - set(want), set(want) - set(got)
                parts = ([f"unexpected {show(sorted(extra, key=repr))}"] if extra else []) + (
                    [f"missing {show(sorted(missing, key=repr))}"] if missing else [])
                return f"the keys differ{where}: " + "; ".join(parts)
            for k in want:
                diff = compare(got[k], want[k], f" at {show(k)}")
                if diff:
                    return diff
            return None
        if type(want) in (list, tuple):
            if type(got) is not type(want) or len(got) != len(want):
                return f"got {show(got)}{where}, expected {show(want)}"
            for i, (g, w) in enumerate(zip(got, want)):
                diff = compare(g, w, f" at position {i}")
                if diff:
                    return diff
            return None
        return exact()(got, want)
    return compare


def dist_close(tol: float = 1e-9) -> Compare:
    """A probability distribution ``{outcome: p}``: the same outcomes, each within ``tol``."""
    return close(rel=0.0, abs_=tol)


def when(predicate: Callable[[Any, Any], bool], message: str) -> Diagnosis:
    """A diagnosis: ``message`` when ``predicate(got, want)`` holds (an error in it says nothing)."""
    def diagnose(got: Any, want: Any) -> str | None:
        try:
            return message if predicate(got, want) else None
        except Exception:           # a predicate meant for another kind of value
            return None
    return diagnose


def multiple_choice(name: str, letters: str):
    """A multiple-choice answer ``name`` (e.g. ``answer_q1``) among ``letters``: ``(form, right)``,
    ``form(got)`` a message when it is not one of the letters (what a visible case may say), and
    ``right(got, want)`` a comparison that also says nothing of the right letter."""
    options = ", ".join(f'"{x}"' for x in letters[:-1]) + f' or "{letters[-1]}"'

    def form(got: Any) -> str | None:
        if type(got) is not str:
            return (f"{name} should be a str, one letter ({options}), but it is {show(got)} — write "
                    f'{name} = "{letters[0]}" (with the quotes)')
        text = got.strip().upper()
        if len(text) != 1 or text not in letters:
            held = {c for c in text if c in letters} if len(text) <= 20 else set()  # "B)" or "answer B": that one
            letter = held.pop() if len(held) == 1 else letters[0]
            return (f"{name} should be one letter, {options}; got {show(got)} — write just the letter in quotes, "
                    f'e.g. {name} = "{letter}"')
        return None

    def right(got: Any, want: Any) -> str | None:
        wrong_form = form(got)
        if wrong_form:
            return wrong_form
        if got.strip().upper() == want.strip().upper():
            return None
        return (f"{name} = {got.strip().upper()!r} is not the right choice — re-read the question and the "
                "section above it")
    return form, right


def question(grade_id: str, name: str, letters: str) -> tuple[Exercise, Case]:
    """A multiple-choice question: its exercise for the visible check (the form only: its expected value
    is the options, never the answer, since a release ships what visible cases expect) and the hidden
    case that checks the letter against the reference's ``name``."""
    form, right = multiple_choice(name, letters)
    visible = Exercise(grade_id, (Case(name, lambda names: getattr(names, name), compare=lambda got, want: form(got),
                                       expect=lambda names: letters),))
    return visible, Case(f"{name}, the letter", lambda names: getattr(names, name), compare=right)

