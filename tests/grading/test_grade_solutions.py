"""Every notebook through the TA's path: the model solution, graded by `lmcourse grade` (guard
before and after every test, signed reports, sandbox), scores every autograded point with no
flag. The guard watches what the course's own test cells do too (rule modes, profile hooks,
references swapped in), so a false flag here would cost every honest student."""

import csv

import nbformat
import pytest

from lmcourse.authoring.course import perfect_submission
from lmcourse.cli import main
from tests.conftest import NOTEBOOKS, ROOT
from tests.grading.test_grade import SANDBOX

pytestmark = pytest.mark.slow  # each notebook graded for real, in the sandbox


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_solution_scores_full_marks_unflagged_under_lmcourse_grade(name, tmp_path):
    source = nbformat.read(ROOT / "autograder" / "source" / name / f"{name}.ipynb", as_version=4)
    release = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    auto_max = sum(c.metadata["nbgrader"]["points"] for c in source.cells
                   if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade"))
    (tmp_path / "subs" / "model").mkdir(parents=True)
    nbformat.write(perfect_submission(release, source), tmp_path / "subs" / "model" / f"{name}.ipynb")
    out = tmp_path / "out"
    assert main(["grade", name, str(tmp_path / "subs"), "--out", str(out), "-j", "1", "--no-progress",
                 "--gradebook", "none", *SANDBOX]) == 0
    (row,) = csv.DictReader((out / "grades.csv").read_text().splitlines())
    assert row["status"] == "graded" and row["flags"] == "", row
    assert float(row["score"]) == auto_max, row
