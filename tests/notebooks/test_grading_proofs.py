"""For every notebook, through the real `nbgrader autograde` on a temporary course copy:
the solution, submitted as a student would, scores full marks; the untouched student
notebook scores 0 and the grader does not crash; a catalogued mutant loses points; every
catalogued alternative (a valid solution written another way) keeps full marks."""

import pytest

from lmcourse.authoring.course import TempCourse, perfect_submission
from lmcourse.authoring.mutants import alternative_rounds, load_alternatives, load_mutants, run_alternatives

from tests.conftest import NOTEBOOKS, ROOT

pytestmark = pytest.mark.slow  # real nbgrader on a course copy, per notebook


# each notebook's course is graded once, on one worker (pytest-xdist --dist loadgroup)
@pytest.fixture(scope="module",
                params=[pytest.param(n, marks=pytest.mark.xdist_group(f"proofs-{n}")) for n in NOTEBOOKS])
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
    # alternatives, as few whole submissions as possible (each answer cell replaced once per round)
    catalogue = ROOT / "autograder" / "alternatives" / f"{name}.py"
    rounds = alternative_rounds(load_alternatives(catalogue)) if catalogue.exists() else []
    for k, by_target in enumerate(rounds):
        nb = perfect_submission(release, source)
        for cell in nb.cells:
            alt = by_target.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
            if alt is not None and cell.metadata["nbgrader"].get("solution"):
                cell.source = alt.source
        course.submit(f"alternatives-{k}", name, nb)
    course.autograde(name)
    course.rounds = rounds
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


def test_alternatives_keep_full_marks_under_real_nbgrader(graded):
    course, name = graded
    full = course.score(name, "perfect").score
    for k, by_target in enumerate(course.rounds):
        s = course.score(name, f"alternatives-{k}")
        if s.score == full:
            continue
        # name the culprit: replay this round's alternatives one at a time in one kernel
        alone = run_alternatives(ROOT, name, list(by_target.values()))
        culprits = "\n".join(f"  {alt}: " + "; ".join(f"{gid}: {msg[:300]}" for gid, msg in f)
                              for alt, f in alone.items() if f) or "  (none fails alone: they interact)"
        raise AssertionError(f"{name}: round {k} of alternatives scored {s.score} of {full} under nbgrader "
                             f"(failed {s.failed_tests}); alone:\n{culprits}")
