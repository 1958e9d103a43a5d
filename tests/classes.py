"""One graded class per notebook, shared by every test that grades whole submissions of it.

A notebook's submissions come from several catalogues: the grading proofs' (the solution, the
untouched release, the alternatives' rounds and a mutant: tests/notebooks/test_grading_proofs.py),
the forgery batches' (tests/grading/test_forgery_by_notebook.py), the red team's routes
(tests/grading/test_forgery_routes.py) and forged records (tests/grading/test_forgery_records.py).
Each declares its students with ``class_students(notebook)``; here they are graded together, in one
`lmcourse grade` batch and one plain `nbgrader autograde` run on one course copy. Graded apart,
each catalogue paid for its own grader start-up, its own course copy and its own correct student,
which runs the whole notebook, training cells included.

Every test that reads a notebook's class carries that notebook's ``proofs_group`` mark, so they all
run on one pytest-xdist worker (``--dist loadgroup``) and the class is graded once a session."""

from __future__ import annotations

import csv
import importlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

# the modules whose ``class_students(notebook)`` gives (students for `lmcourse grade`, students for
# plain nbgrader), each a ``{student: notebook}``; a student's name is the same in both graders
CATALOGUES = ("tests.notebooks.test_grading_proofs", "tests.grading.test_forgery_by_notebook",
              "tests.grading.test_forgery_routes", "tests.grading.test_forgery_records",
              "tests.grading.test_forgery_world", "tests.grading.test_students_11",
              "tests.grading.test_students_12")


def proofs_group(name: str) -> pytest.MarkDecorator:
    """The xdist group of every test that reads ``name``'s class."""
    return pytest.mark.xdist_group(f"proofs-{name}")


def harness_group(name: str) -> pytest.MarkDecorator:
    """The xdist group of the tests that read ``name``'s mutant harness run (tests/notebooks/conftest.py):
    a group apart from the class's, so another worker runs the harness while this one grades the class."""
    return pytest.mark.xdist_group(f"harness-{name}")


@dataclass
class GradedClass:
    name: str
    course: object                                   # the TempCourse plain nbgrader graded
    rows: dict[str, dict[str, str]]                  # student -> `lmcourse grade`'s grades.csv row
    out: Path                                        # `lmcourse grade`'s --out folder
    plain_students: set[str] = field(default_factory=set)

    def plain(self, student: str):
        """Plain nbgrader's Score of ``student`` (authoring.course.Score)."""
        assert student in self.plain_students, f"{student} was not graded by plain nbgrader in {self.name}'s class"
        return self.course.score(self.name, student)

    def autograded(self, student: str) -> nbformat.NotebookNode:
        """``student``'s notebook as plain nbgrader autograded it (outputs and errors kept)."""
        return nbformat.read(self.course.path / "autograded" / student / self.name / f"{self.name}.ipynb",
                             as_version=4)


def students(name: str) -> tuple[dict, dict]:
    """Every catalogue's students of ``name``, merged; a name two catalogues both use is an error."""
    grade, plain = {}, {}
    for module in CATALOGUES:
        g, p = importlib.import_module(module).class_students(name)
        for into, new in ((grade, g), (plain, p)):
            clash = set(into) & set(new)
            assert not clash, f"{module} names students another catalogue of {name} names: {sorted(clash)}"
            into.update(new)
    return grade, plain


def grade(name: str, tmp_path_factory) -> GradedClass:
    from lmcourse.authoring.course import TempCourse
    from lmcourse.commands.main import main
    from tests.grading.test_grade import SANDBOX

    by_grade, by_plain = students(name)
    subs, out = tmp_path_factory.mktemp(f"class-{name}"), tmp_path_factory.mktemp(f"grades-{name}")
    for student, nb in by_grade.items():
        (subs / student).mkdir()
        nbformat.write(nb, subs / student / f"{name}.ipynb")
    course = TempCourse(tmp_path_factory.mktemp(f"course-{name}"), [name])
    for student, nb in by_plain.items():
        course.submit(student, name, nb)
    # plain nbgrader grades one notebook at a time, in a process of its own: it runs beside
    # `lmcourse grade` (separate folders, separate gradebooks) instead of after it
    with ThreadPoolExecutor(1) as pool:
        plain = pool.submit(course.autograde, name)
        assert main(["grade", name, str(subs), "--out", str(out), "-j", "2", "--no-progress", "--gradebook", "none",
                     *SANDBOX]) == 0
        plain.result()
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    return GradedClass(name, course, rows, out, set(by_plain))
