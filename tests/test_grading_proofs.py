"""For every notebook, through the real `nbgrader autograde` on a temporary course copy:
the solution, submitted as a student would, scores full marks; the untouched student
notebook scores 0 and the grader does not crash."""

import pytest

from lmcourse.grading.course import TempCourse, perfect_submission
from lmcourse.grading.mutants import load_mutants

from .conftest import NOTEBOOKS, ROOT


@pytest.fixture(scope="module", params=NOTEBOOKS)
def graded(request, tmp_path_factory):
    name = request.param
    course = TempCourse(tmp_path_factory.mktemp(f"course-{name}"), [name])
    release = course.release(name)
    import nbformat

    source = nbformat.read(course.path / "source" / name / f"{name}.ipynb", as_version=4)
    course.submit("perfect", name, perfect_submission(release, source))
    course.submit("untouched", name, release)
    # the mutant harness emulates nbgrader in one kernel; check one mutant on the real grader too
    mutants = load_mutants(ROOT / "autograder" / "mutants" / f"{name}.py")
    with_bug = perfect_submission(release, source)
    for cell in with_bug.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == mutants[0].target:
            cell.source = mutants[0].source
    course.submit("mutant", name, with_bug)
    course.autograde(name)
    return course, name


def test_solution_scores_full_marks(graded):
    course, name = graded
    s = course.score(name, "perfect")
    assert s.failed_tests == [], f"{name}: the solution fails {s.failed_tests}"
    assert s.auto_max > 0 and s.score == s.auto_max, f"{name}: solution scored {s.score} of {s.auto_max}"


def test_untouched_release_scores_zero(graded):
    course, name = graded
    s = course.score(name, "untouched")
    assert s.score == 0, f"{name}: the untouched student notebook scored {s.score}"
    assert s.max_score == course.score(name, "perfect").max_score


def test_a_mutant_loses_points_under_real_nbgrader(graded):
    course, name = graded
    s = course.score(name, "mutant")
    assert s.failed_tests and s.score < course.score(name, "perfect").score, (
        f"{name}: the first mutant lost no points under nbgrader autograde")
