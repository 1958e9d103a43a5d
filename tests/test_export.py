"""``lmcourse grade export`` on a grade run's files made here: a gradebook built with nbgrader's
API holds the hand-graded points a TA would enter in formgrader; every file written is parsed
back. (A real grade run followed by export and a one-student regrade is in test_grade_semester.py.)
"""

from __future__ import annotations

import csv
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

from lmcourse.grading.export import ExportError, export
from lmcourse.grading.roster import Student

# nbgrader 0.9.6's add_submission under SQLAlchemy 2 (see grade.py's _quiet_nbgrader_session_warnings)
pytestmark = pytest.mark.filterwarnings(r"ignore:Object of type <Submitted\w+> not in session")

A = "01_ngram"
TESTS = ["pad_sentence_tests", "q1_tests"]     # 1 point each, autograded
HAND = "q2"                                    # 2 points, hand-graded


def grade_run(out: Path) -> None:
    """What `lmcourse grade` leaves: grades.csv (with the late columns), students.json, pages."""
    out.mkdir(parents=True, exist_ok=True)
    head = ["student", "assignment", "score", "max_score", "status", "flags", "detail", "submitted_at", "due",
            "late_hours", "penalty_pct", *TESTS, HAND]
    rows = [["1001", A, "2", "4", "graded", "", "", "", "", "", "0", "1", "1", ""],
            ["1002", A, "1", "4", "graded", "", "", "", "", "", "10", "1", "0", ""],       # late, 10%
            ["77", A, "2", "4", "graded", "renamed", "graded x.ipynb", "", "", "", "0", "1", "1", ""],
            ["1003", A, "0", "4", "missing-notebook", "", "no submission", "", "", "", "0", "0", "0", ""],
            ["2001", A, "1", "4", "graded", "", "", "", "", "", "0", "0", "1", ""]]
    with open(out / "grades.csv", "w", newline="") as f:
        csv.writer(f).writerows([head, *rows])
    (out / "students.json").write_text(json.dumps({
        "1001": {"name": "smithjane", "source": "canvas", "lms_user": "1001"},
        "1002": {"name": "doejohn", "source": "canvas", "lms_user": "1002"},
        "77": {"name": "Cy_Young", "source": "moodle", "lms_user": "77"},
        "2001": {"name": "mallorye", "source": "canvas", "lms_user": "2001"}}))
    (out / "feedback").mkdir(exist_ok=True)
    for s in ("1001", "1002", "77", "2001"):
        (out / "feedback" / f"{s}.html").write_text(f"<html><body>feedback for {s}</body></html>")


def gradebook(db: Path) -> None:
    from nbgrader.api import Gradebook

    bindir = str(Path(sys.executable).parent)     # nbgrader runs alembic from the venv
    os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.add_assignment(A)
        gb.add_notebook(A, A)
        for t in TESTS:
            gb.add_grade_cell(t, A, A, max_score=1, cell_type="code")
        gb.add_grade_cell(HAND, A, A, max_score=2, cell_type="markdown")
        gb.add_solution_cell(HAND, A, A)
        for s in ("1001", "1002", "77", "2001"):
            gb.add_student(s)
            gb.add_submission(A, s)
        gb.find_grade(HAND, A, A, "1001").manual_score = 2
        gb.find_grade(HAND, A, A, "1002").manual_score = 1
        gb.find_comment(HAND, A, A, "1002").manual_comment = "Say why the counts are smoothed."
        gb.find_grade(HAND, A, A, "77").manual_score = 1.5
        gb.find_grade("q1_tests", A, A, "77").manual_score = 0     # a TA overrules a test
        gb.db.commit()                                              # 2001: not hand-graded yet


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("grades")
    grade_run(out)
    db = out / "gradebook.db"
    gradebook(db)
    roster = {"1001": Student("1001", "Smith, Jane", "jane@example.edu", "A", sis_id="S1", login="jsmith"),
              "1002": Student("1002", "Doe, John", "john@example.edu", "B"),
              "1003": Student("1003", "Lee, Ann", "ann@example.edu", "A")}
    summary = export(out, gradebook=db, roster=roster, canvas_column="Lab 1 (4411)",
                     hidden=["assert pad_sentence(['a'], 3) == secret"])
    return out, summary


def read(path: Path) -> list[dict]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_grades_csv_merges_hand_points_and_penalty(exported):
    out, summary = exported
    rows = {r["student"]: r for r in read(out / "export" / "grades.csv")}
    assert set(rows) == {"1001", "1002", "77", "1003", "2001"}
    r = rows["1001"]
    assert (r["auto_score"], r["hand_score"], r["raw_score"], r["final_score"], r["max_score"]) == \
           ("2", "2", "4", "4", "4")
    assert (r["name"], r["email"], r["section"], r[HAND], r["q1_tests"]) == ("Smith, Jane", "jane@example.edu",
                                                                            "A", "2", "1")
    r = rows["1002"]                        # 1 auto + 1 hand = 2, 10% off
    assert (r["raw_score"], r["penalty_pct"], r["penalty"], r["final_score"]) == ("2", "10", "0.2", "1.8")
    r = rows["77"]                          # the TA's 0 for q1_tests wins over the autograder's 1
    assert (r["q1_tests"], r[HAND], r["raw_score"], r["name"]) == ("0", "1.5", "2.5", "Cy_Young")
    assert "needs-hand-grading" in rows["2001"]["flags"] and rows["2001"]["final_score"] == "1"
    assert rows["1003"]["status"] == "missing-notebook" and rows["1003"]["final_score"] == "0"
    assert any("not graded yet" in w for w in summary["warnings"])


def test_canvas_import_file(exported):
    out, _ = exported
    lines = list(csv.reader((out / "export" / "canvas.csv").read_text().splitlines()))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 1 (4411)"]
    assert lines[1][0].strip() == "Points Possible" and lines[1][5] == "4"
    rows = {r[1]: r for r in lines[2:]}
    assert rows["1001"] == ["Smith, Jane", "1001", "S1", "jsmith", "A", "4"]
    assert rows["1002"][5] == "1.8"


def test_moodle_import_file(exported):
    out, _ = exported
    rows = {r["ID number"]: r for r in read(out / "export" / "moodle.csv")}
    assert rows["1002"]["Email address"] == "john@example.edu" and rows["1002"][A] == "1.8"
    assert "late penalty" in rows["1002"]["Feedback"]


def test_feedback_folders_and_moodle_zip(exported):
    out, _ = exported
    fb = out / "export" / "feedback"
    assert (fb / "1001" / "feedback.html").read_text() == (out / "feedback" / "1001.html").read_text()
    text = (fb / "1002" / "grade.txt").read_text()
    assert "Say why the counts are smoothed." in text and "-0.2" in text
    assert not (fb / "1003" / "feedback.html").exists() and (fb / "1003" / "grade.txt").is_file()
    with zipfile.ZipFile(out / "export" / "moodle_feedback.zip") as zf:
        names = sorted(zf.namelist())
    # Moodle reads the participant id after the first "_": the name must hold none
    assert names == ["Cy Young_77_assignfeedback_file_/feedback.html", "Cy Young_77_assignfeedback_file_/grade.txt"]
    assert names[0].split("/")[0].split("_")[1] == "77"


def test_a_page_with_hidden_lines_is_withheld(tmp_path):
    out = tmp_path / "g"
    grade_run(out)
    (out / "feedback" / "1001.html").write_text("<pre>assert pad_sentence([&#x27;a&#x27;], 3) == secret</pre>")
    summary = export(out, hidden=["assert pad_sentence(['a'], 3) == secret"])
    assert not (out / "export" / "feedback" / "1001" / "feedback.html").exists()
    assert any("withheld" in w for w in summary["warnings"])


def test_no_grade_run(tmp_path):
    with pytest.raises(ExportError, match="lmcourse grade"):
        export(tmp_path)
