"""The course's multiple-choice answers: each master's solution letter is its reference's, and the right
letters are spread over the options, so that "always B" is no strategy."""

from __future__ import annotations

import importlib
import re
from collections import Counter

import pytest

from lmcourse.marking import notebooks
from tests.conftest import ROOT

MASTERS = ROOT / "autograder" / "masters"
# a letter a solution cell sets: answer_q1 = "B"
ANSWER = re.compile(r'^(answer_q\w*) = "([A-Z])"', re.M)


def solution_letters(notebook: str) -> dict[str, str]:
    text = (MASTERS / f"{notebook}.py").read_text(encoding="utf-8")
    return dict(ANSWER.findall(text))


def course_letters() -> dict[tuple[str, str], str]:
    return {(nb, name): letter for nb in sorted(notebooks.TESTS) for name, letter in solution_letters(nb).items()}


@pytest.mark.parametrize("notebook", sorted(notebooks.TESTS))
def test_each_solution_letter_is_the_references(notebook):
    reference = importlib.import_module(notebooks.load(notebook).reference)
    for name, letter in solution_letters(notebook).items():
        assert getattr(reference, name) == letter, \
            f"{notebook}: the master answers {name} = {letter!r}, its reference {getattr(reference, name)!r}"


def test_the_course_has_questions():
    assert len(course_letters()) >= 20


def test_right_letters_are_balanced():
    """No letter is right much more often than an even share: at most a third of all answers, and each
    of A to D right at least a sixth of the time (two- and three-option questions included)."""
    counts = Counter(course_letters().values())
    total = sum(counts.values())
    assert set(counts) <= set("ABCD"), counts
    for letter in "ABCD":
        assert counts[letter] <= total / 3, \
            f"{letter} is the right answer of {counts[letter]} of {total} questions: move some options " \
            f"(the question unchanged) and the reference letter with them ({dict(counts)})"
        assert counts[letter] >= total / 6, f"{letter} is right only {counts[letter]} times of {total} ({dict(counts)})"


def test_no_notebook_always_answers_one_letter():
    """A notebook of three or more questions uses at least two letters."""
    for nb in sorted(notebooks.TESTS):
        letters = list(solution_letters(nb).values())
        if len(letters) >= 3:
            assert len(set(letters)) >= 2, f"{nb}: every question's answer is {letters[0]}"
