"""The grading summary's wording (lmcourse.grading.reports.summary): counts agree with their nouns."""

from lmcourse.grading.reports import summary
from lmcourse.grading.result import Result


def _res(student: str) -> Result:
    return Result(student, "01_ngram", "graded", score=21, max_score=23, auto_max=21)


def test_one_submission_is_singular_and_more_are_plural():
    assert "(1 submission; 2 more points are graded by hand)" in summary([_res("alice")])
    assert "(2 submissions; 2 more points" in summary([_res("alice"), _res("bob")])
