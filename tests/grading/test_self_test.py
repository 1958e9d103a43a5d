"""A TA's first checks of the grader: the solution notebook handed in as it is gets a message
that names it, and `lmcourse grade A --self-test` grades the solution as a student would hand it
in."""

from __future__ import annotations

import csv
import shutil

import pytest

from lmcourse.commands.main import main
from lmcourse.commands.paths import repo_root
from lmcourse.grading.template import Template
from tests.grading.conftest import LIMITS
from tests.grading.test_grade import SANDBOX

ROOT = repo_root()
A = "08_bpe"


@pytest.mark.slow
def test_the_solution_notebook_handed_in_is_named_as_such(tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(ROOT / "solutions" / f"{A}.ipynb", subs / "alice.ipynb")       # the TA's first try
    shutil.copy(ROOT / "solutions" / "01_ngram.ipynb", subs / "bob.ipynb")     # truly another notebook
    out = tmp_path / "out"
    assert main(["grade", A, str(subs), "--out", str(out), "--gradebook", "none", "--no-progress", *SANDBOX]) == 0
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    assert rows["alice"]["status"] == rows["bob"]["status"] == "wrong-assignment"
    alice = rows["alice"]["detail"]
    assert f"solution notebook (solutions/{A}.ipynb)" in alice and "nbgrader's cell metadata" in alice, alice
    assert f"lmcourse grade {A} --self-test" in alice and "another notebook" not in alice, alice
    assert "was another notebook submitted?" in rows["bob"]["detail"]
    assert "solution notebook" in (out / "feedback" / "alice.html").read_text()


def test_the_self_test_notebook_is_the_release_with_the_answers(tmp_path):
    tpl = Template(A, tmp_path)
    nb = tpl.self_test_notebook()
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells] == [
        c.metadata.get("nbgrader", {}).get("grade_id") for c in tpl.release.cells]
    answers = [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert answers and not [a for a in answers if "BEGIN SOLUTION" in a or "NotImplementedError(\"Exercise" in a]
    assert not tpl.is_solution_copy(nb.__repr__().encode())            # not JSON: not a copy
    assert tpl.is_solution_copy((ROOT / "solutions" / f"{A}.ipynb").read_bytes())
    assert not tpl.is_solution_copy((ROOT / "notebooks" / f"{A}.ipynb").read_bytes())


def test_self_test_refuses_submissions_and_a_grade_needs_them(capsys):
    assert main(["grade", A, "somewhere", "--self-test"]) == 2
    assert "give no submissions" in capsys.readouterr().err
    assert main(["grade", A]) == 2
    assert "--self-test" in capsys.readouterr().err


@pytest.mark.slow
def test_self_test_gives_the_solution_every_autograded_point(tmp_path, capsys):
    out = tmp_path / "self"
    assert main(["grade", A, "--self-test", "--out", str(out), *LIMITS, *SANDBOX]) == 0, capsys.readouterr()
    said = capsys.readouterr().out
    assert "self-test: the solution gets every autograded point" in said and "graded" in said, said
    assert (out / "feedback" / "solution.html").is_file()
