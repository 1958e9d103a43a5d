"""What the TA guide's and the README's commands write inside the clone is ignored by git: hidden
tests (the Gradescope zip, nbgrader's release), student work and scores (submissions,
autograded notebooks, feedback, grades.csv, the gradebook) must never be committed by accident."""

import subprocess

import pytest

from tests.conftest import ROOT

WRITTEN = [
    "autograder.zip",                       # lmcourse grade gradescope 01_ngram --out autograder.zip
    "submissions.zip",                      # an LMS download graded from the clone (the shards' example)
    "build/grades/grades.csv",              # lmcourse grade ... --out build/grades
    "build/shards/1/grades.csv",
    "gradebook.db",                         # a Formgrader started outside autograder/ (older make lab TA=1)
    "autograder/gradebook.db",              # plain nbgrader, Formgrader
    "autograder/grades.csv",                # nbgrader export
    "autograder/.nbgrader.log",
    "autograder/release/01_ngram/01_ngram.ipynb",          # nbgrader generate_assignment
    "autograder/submitted/alice/01_ngram/01_ngram.ipynb",
    "autograder/autograded/alice/01_ngram/01_ngram.ipynb",  # nbgrader autograde
    "autograder/feedback/alice/01_ngram/01_ngram.html",     # nbgrader generate_feedback
    "work/01_ngram.ipynb",                  # make lab (work/ ignores itself: its own .gitignore)
]


@pytest.mark.parametrize("path", WRITTEN)
def test_grading_outputs_are_ignored(path):
    if path.startswith("work/") and not (ROOT / "work" / ".gitignore").exists():
        pytest.skip("work/ ignores itself once make lab made it (tests/test_lab.py)")
    run = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT)
    assert run.returncode == 0, f"{path} would show up in git status"


def test_the_course_files_are_not_ignored():
    for path in ["autograder/source/01_ngram/01_ngram.ipynb", "autograder/nbgrader_config.py",
                 "lmcourse/data_files/scaling_sweep_cpu.csv"]:
        assert subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT).returncode == 1, path
