"""A feedback page written before hand grading says a written answer is not graded yet, where
nbgrader's template would print "Written response (Score: 0.0 / 2.0)"; a scored one keeps its score."""

from __future__ import annotations

import nbformat

from lmcourse.grading.feedback import _exporter, ungraded


def _page(written_score):
    answer = nbformat.v4.new_markdown_cell("The loss starts at ln V.", metadata={"nbgrader": {
        "grade": True, "solution": True, "locked": False, "grade_id": "q4_free_text", "points": 2.0,
        "score": written_score}})
    test = nbformat.v4.new_code_cell("tests.check('q1')", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": "q1_tests", "points": 1.0, "score": 0.0}})
    nb = nbformat.v4.new_notebook(cells=[answer, test])
    resources = {"nbgrader": {"notebook": "05_gpt", "assignment": "05_gpt", "student": "s", "score": 0.0,
                              "max_score": 3.0, "late_penalty": 0}}
    return _exporter().from_notebook_node(nb, resources=resources)[0]


def test_nbgrader_alone_shows_a_zero_for_the_ungraded_answer():
    assert "Written response</a> (Score: 0.0 / 2.0)" in _page(None)   # what the fix is for


def test_an_ungraded_written_answer_is_said_to_wait_for_a_person():
    page = ungraded(_page(None), {"q4_free_text": 2.0})
    assert "Written response</a> (not graded yet: 2 points, graded by hand)" in page
    assert "Not graded yet (2 points, graded by hand)" in page
    assert "0.0 / 2.0" not in page
    assert "Score: 0.0 / 1.0" in page            # the test cell's own score is left as it is


def test_a_hand_graded_answer_keeps_its_score():
    page = ungraded(_page(1.5), {})
    assert "Written response</a> (Score: 1.5 / 2.0)" in page and "not graded yet" not in page.lower()
