"""The one `lmcourse grade` batch of notebook 01 that tests/grading/test_grade.py (bad submissions,
sandbox attacks), tests/grading/test_forgery.py (forged passes) and tests/grading/test_gradescope.py
(what each results.json must agree with) all read: their students share one class folder, one
grader run and one correct student, built once per session on the worker of the ``grader-batches``
xdist group (three batches would cost three grader start-ups, templates and correct
students, and three waits for the infinite loop's cell cap)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import NamedTuple

import pytest


class Batch(NamedTuple):
    """The graded catalogue: where it is, what it gave, how it was asked for."""
    subs: Path                       # the submissions folder (nbgrader's submitted/ layout)
    out: Path                        # the grader's --out folder
    rows: dict[str, dict[str, str]]  # student -> its grades.csv row
    before: str                      # tree_hash(subs) before grading
    args: list[str]                  # the `lmcourse` command line that graded it


# a generous notebook cap: the whole notebook takes ~15 s alone, but CI runs this beside another
# test worker on 2 cores; the cell cap (loops meet it) leaves room for an honest transformers import
LIMITS = ["--notebook-timeout", "120", "--cell-timeout", "20", "--memory-mb", "3072", "--processes", "256"]


@pytest.fixture(scope="session")
def grader_batch(tmp_path_factory) -> Batch:
    from lmcourse.commands.main import main
    from tests.grading import test_forgery, test_grade

    out = tmp_path_factory.mktemp("grades")
    subs = test_grade.write_batch(tmp_path_factory.mktemp("class"), out, extra=test_forgery.students())
    before = test_grade.tree_hash(subs)
    course = tmp_path_factory.mktemp("course")
    args = ["grade", test_grade.A, str(subs), "--out", str(out), "-j", "2", *LIMITS, "--no-progress",
            "--gradebook", str(course / "gradebook.db"), *test_grade.SANDBOX]
    assert main(args) == 0
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    return Batch(subs, out, rows, before, args)


def hidden_lines(source) -> list[str]:
    """The lines (over 10 characters) between a source notebook's hidden-test markers, read here
    independently of the grader's own leak check (lmcourse.grading.template.hidden_test_lines)."""
    hidden, inside = [], False
    for c in source.cells:
        for line in c.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 10:
                hidden.append(line.strip())
    return hidden
