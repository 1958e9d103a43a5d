"""Notebook 11's gaming student, graded: the routes to points its visible tests do not all show, handed in as
whole submissions (the solution with one answer replaced) and graded by `lmcourse grade` in the notebook's class
(tests/classes.py), with its grading proofs' correct student.

Each route scores 0 on its own exercise or is flagged for a person; every other exercise keeps its points.
The routes the visible tests catch are mutants in autograder/variants/11_finetuning.py; these are the ones
that need the grader itself: a course helper rebuilt from its code object (the in-kernel rules know the helper
by its code, so only the scan sees the copy), written here, and the course's answer or peft's layer where the
graded kernel has no reference and refuses peft's code, mutants too, handed in as the catalogue's cells
(tests/grading/mutant_routes.py).
"""

from __future__ import annotations

import pytest

from tests.classes import proofs_group
from tests.grading.mutant_routes import mutant_routes
from tests.grading.test_forgery_by_notebook import _students

pytestmark = [pytest.mark.slow]

NB = "11_finetuning"

ROUTES = {
    # lmcourse.decoding.sequence_logprob is refused in exercise 1: its code object copied under another name runs
    # as code the rules do not know
    "copied_sequence_logprob": ("score_continuations", """
import types
from lmcourse import decoding

_mine = types.FunctionType(decoding.sequence_logprob.__code__.replace(co_name="mine"),
                           decoding.sequence_logprob.__globals__)


def score_continuations(model, prompts, continuations, pad_id=0):
    device = next(model.parameters()).device
    return torch.cat([_mine(model, torch.tensor([p + c], device=device), len(p))
                      for p, c in zip(prompts, continuations)])
"""),
    # mutants too (the visible tests catch them at home): graded here as the catalogue's cells
    **mutant_routes(NB, {
        "reference_pool_hidden": "lmcourse.reference.finetuning.pool_hidden called",
        "peft_lora_layer": "peft's LoRA layer doing the work",
    }),
}


def class_students(notebook: str) -> tuple[dict, dict]:
    """tests/classes.py: the routes, for `lmcourse grade` only."""
    return (_students(NB, ROUTES), {}) if notebook == NB else ({}, {})


@pytest.fixture(scope="module")
def rows(graded_class) -> dict[str, dict]:
    """student -> grades.csv row: each route and the class's correct student."""
    cls = graded_class(NB)
    return {name: cls.rows[name] for name in (*ROUTES, "perfect")}


def _graded_tests(row: dict) -> list[str]:
    return [k for k in row if k.endswith("_tests")]


@proofs_group(NB)
def test_11_correct_keeps_full_marks(rows):
    row = rows["perfect"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in ROUTES.values()), row


@proofs_group(NB)
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_11_route_scores_zero_on_its_exercise_or_is_flagged(rows, route):
    row, own = rows[route], f"{ROUTES[route][0]}_tests"
    assert row["status"] == "graded" and (float(row[own]) == 0 or "source-scan" in row["flags"]), \
        f"{route}: {own} scored {row[own]}: {row}"
    others = [t for t in _graded_tests(row) if t != own]
    lost = [t for t in others if float(row[t]) < float(rows["perfect"][t])]
    assert not lost, f"{route}: one mistake costs once, but it also lost {lost}: {row}"
