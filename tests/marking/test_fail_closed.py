"""A graded test cell fails closed: under an nbgrader course of a TA's own, whose config leaves out the
course's judge (``JudgeRecords``), every test cell scores 0, the untouched notebook's and the solution's
alike (each ``tests.grade`` line raises AwaitingJudge after its record, and nbgrader scores a cell that
raised 0); with the course's config the solution keeps every point. One real nbgrader course of 01."""

import shutil

import nbformat
import pytest

from lmcourse.authoring.course import TempCourse, perfect_submission
from lmcourse.grading.nbgrader_cli import run_nbgrader
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # the real nbgrader, three kernels

NAME = "01_ngram"
# what a TA who knows nbgrader but not this course writes: where the course is, a longer cell timeout
MINIMAL_CONFIG = """
c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
c.Execute.timeout = 120
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = TempCourse(tmp_path_factory.mktemp("fail-closed"), [NAME])
    source = nbformat.read(ROOT / "autograder" / "source" / NAME / f"{NAME}.ipynb", as_version=4)
    release = course.release(NAME)
    course.submit("untouched", NAME, release)
    course.submit("solution", NAME, perfect_submission(release, source))
    (course.path / "nbgrader_config.py").write_text(MINIMAL_CONFIG.format(root=str(course.path)))
    course.autograde(NAME)
    return course


def _test_cells(course, student) -> dict[str, tuple[float, float]]:
    """``{grade id: (auto score, max score)}`` of the student's test cells."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.path / 'gradebook.db'}") as gb:
        sub = gb.find_submission_notebook(NAME, NAME, student)
        return {g.name: (g.auto_score, g.max_score) for g in sub.grades if g.cell_type == "code"}


@pytest.mark.parametrize("student", ["untouched", "solution"])
def test_without_the_course_judge_every_test_cell_scores_zero(course, student):
    cells = _test_cells(course, student)
    assert cells and all(most > 0 for _, most in cells.values())
    scored = {name: got for name, (got, _) in cells.items() if got != 0}
    assert not scored, f"{student}: test cells scored under a config without the course's judge: {scored}"
    autograded = nbformat.read(course.path / "autograded" / student / NAME / f"{NAME}.ipynb", as_version=4)
    said = [o.evalue for c in autograded.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") in cells
            for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert len(said) == len(cells) and all("nbgrader without the course's config" in s for s in said), said[:2]


def test_with_the_course_config_the_solution_keeps_every_point(course):
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", course.path / "nbgrader_config.py")
    run_nbgrader(["autograde", NAME, "--student", "solution", "--force", "--log-level=WARN"], course.path)
    s = course.score(NAME, "solution")
    assert s.score == s.auto_max and not s.failed_tests, s
