"""Notebook 12's gaming student: routes to points without the work that the visible tests cannot see, graded
from records by `lmcourse grade` in the notebook's class (tests/classes.py), with the grading proofs' solution
as the correct student. The routes the visible tests refuse (the course's answer or another notebook's
imported, the course's generation loops, transformers' code, a float that lies to comparisons) are mutants in
autograder/variants/12_instruct.py; one of them is graded here too, as the catalogue's cell
(tests/grading/mutant_routes.py).

Each attempt must score 0 on its own exercise, or be flagged; the route that also reaches a later test cell
(the test helpers replaced) is judged on its own exercise's cell only.
"""

from __future__ import annotations

import pytest

from tests.classes import proofs_group
from tests.grading.mutant_routes import mutant_routes
from tests.grading.test_forgery_by_notebook import _students

pytestmark = [pytest.mark.slow]

NB = "12_instruct"

# the visible cases' inputs and answers written out; anything else handed back as if it had no repeats
_HARD_CODED = '''def deduplicate(text, min_chars):
    known = {
        ("To be, or not\\n\\nExit.\\n\\nTo be, or not\\n\\nAy, there's the rub\\n\\nExit.\\n\\nTo be, or not", 8):
            ("To be, or not\\n\\nExit.\\n\\nAy, there's the rub\\n\\nExit.", 2),
        ("To be, or not\\n\\nExit.\\n\\nTo be, or not\\n\\nAy, there's the rub\\n\\nExit.\\n\\nTo be, or not", 3):
            ("To be, or not\\n\\nExit.\\n\\nAy, there's the rub", 3),
        ("abcd\\n\\nxy\\n\\nabcd\\n\\nxy", 4): ("abcd\\n\\nxy\\n\\nxy", 1),
        ("To be\\n\\n\\nTo be\\n\\nTo be", 3): ("To be\\n\\n\\nTo be", 1),
    }
    return known.get((text, min_chars), (text, 0))
'''

# the exercise's answer right, and the notebook's test helpers replaced by ones that pass whatever they see
_HELPERS_REPLACED = '''def exact_match(prediction, reference):
    return " ".join(prediction.split()).lower() == " ".join(reference.split()).lower()


tests.check = tests.grade = lambda *args, **kwargs: None
'''

GAMING_ATTEMPTS = {
    "gaming_12_visible_answers_hard_coded": ("deduplicate", _HARD_CODED),
    "gaming_12_test_helpers_replaced": ("exact_match", _HELPERS_REPLACED),
    # a mutant too (the visible tests catch it at home), graded as the catalogue's cell: the refusal of the
    # course's given decoders holds in the sandbox's kernel
    **mutant_routes(NB, {
        "gaming_12_seq2seq_decoder_on_an_adapter": "gaming: lmcourse.nn.seq2seq.greedy_decode on an adapter",
    }),
}


def class_students(notebook: str) -> tuple[dict, dict]:
    """tests/classes.py: 12's gaming attempts, for `lmcourse grade` only."""
    if notebook != NB:
        return {}, {}
    return _students(NB, GAMING_ATTEMPTS), {}


@pytest.fixture(scope="module")
def graded_12(graded_class):
    return graded_class(NB)


@proofs_group(NB)
def test_12_correct_keeps_full_marks(graded_12):
    row = graded_12.rows["perfect"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in GAMING_ATTEMPTS.values()), row


@proofs_group(NB)
@pytest.mark.parametrize("attempt", sorted(GAMING_ATTEMPTS))
def test_12_gaming_scores_zero_on_its_exercise(graded_12, attempt):
    row, test = graded_12.rows[attempt], f"{GAMING_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and (float(row[test]) == 0 or row["flags"]), \
        f"{attempt}: {test} scored {row[test]}: {row}"
