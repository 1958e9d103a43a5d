"""LMS downloads: each format as a small zip made here (invented names, no real student data).

The notebooks are tiny stand-ins: ingest only reads names, never the content.
"""

from __future__ import annotations

import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lmcourse.grading import lms
from lmcourse.grading.ingest import find_submissions

A = "01_ngram"
NB = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def make_zip(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def by_id(subs):
    return {s.student: s for s in subs}


def test_canvas_zip(tmp_path):
    """Canvas: flat ``name[_LATE]_userid_submissionid_file`` (only the latest submission's
    files); a resubmission renamed by Canvas (``-2``), a late one, a student's own renaming,
    a PDF instead of a notebook, and a file no Canvas name explains."""
    z = make_zip(tmp_path / "submissions.zip", {
        f"smithjane_1001_5001_{A}.ipynb": NB,
        f"doejohn_LATE_1002_5002_{A}.ipynb": NB,
        f"leeann_1003_5003_{A}-2.ipynb": NB,               # Canvas's name for a third upload
        f"kimbo_1004_5004_{A} (1).ipynb": NB,              # renamed by the student
        "nguyenvan_1005_5005_report.pdf": b"%PDF-1.4",
        "stray notebook.ipynb": NB,
    })
    subs = by_id(find_submissions(z, A, tmp_path / "unpack"))
    assert set(subs) == {"1001", "1002", "1003", "1004", "1005", "stray_notebook"}
    jane = subs["1001"]
    assert (jane.source, jane.name, jane.lms_user, jane.lms_submission) == ("canvas", "smithjane", "1001", "5001")
    assert jane.flags == [] and not jane.late_marker and jane.submitted_at is None
    assert subs["1002"].late_marker and subs["1002"].flags == []
    assert subs["1003"].path.name.endswith(f"{A}-2.ipynb") and subs["1003"].flags == []
    assert "resubmitted" in subs["1003"].detail
    assert subs["1004"].flags == ["renamed"]
    assert subs["1005"].path is None and "report.pdf" in subs["1005"].detail
    assert subs["stray_notebook"].flags == ["unknown-lms-name"]


def test_moodle_zip_folders_and_flat(tmp_path):
    """Moodle: ``Full Name_participantid_assignsubmission_file_/`` folders (4.1+ without the
    trailing ``_``, older flat files with the prefix); online text is not a notebook."""
    z = make_zip(tmp_path / "moodle.zip", {
        f"Jane Smith_77_assignsubmission_file_/{A}.ipynb": NB,
        f"John Doe_78_assignsubmission_file/{A} (2).ipynb": NB,
        "John Doe_78_assignsubmission_onlinetext_/onlinetext.html": b"<p>hi</p>",
        f"Ann Lee_79_assignsubmission_file_{A}.ipynb": NB,
        "Bo Kim_80_assignsubmission_onlinetext_/onlinetext.html": b"<p>no file</p>",
    })
    subs = by_id(find_submissions(z, A, tmp_path / "unpack"))
    assert set(subs) == {"77", "78", "79", "80"}
    assert (subs["77"].source, subs["77"].name, subs["77"].flags) == ("moodle", "Jane Smith", [])
    assert subs["78"].flags == ["renamed"]
    assert subs["79"].path.name.endswith(f"{A}.ipynb") and subs["79"].flags == []
    assert subs["80"].path is None
    assert all(s.submitted_at is None and not s.late_marker for s in subs.values())


def test_moodle_single_student_is_not_unwrapped(tmp_path):
    z = make_zip(tmp_path / "one.zip", {f"Jane Smith_77_assignsubmission_file_/{A}.ipynb": NB})
    assert [s.student for s in find_submissions(z, A, tmp_path / "unpack")] == ["77"]


def test_nbgrader_timestamp(tmp_path):
    for student, stamp in [("ada", "2026-03-01 22:30:00.000000 UTC"), ("bob", "2026-03-02 01:15:00 +0100"),
                           ("cy", None), ("dee", "2026-03-02 01:15:00.000000 CET")]:
        d = tmp_path / "submitted" / student / A
        d.mkdir(parents=True)
        (d / f"{A}.ipynb").write_bytes(NB)
        if stamp:
            (d / "timestamp.txt").write_text(stamp)
    subs = by_id(find_submissions(tmp_path, A, tmp_path / "unpack"))
    assert subs["ada"].submitted_at == datetime(2026, 3, 1, 22, 30, tzinfo=timezone.utc)
    assert subs["bob"].submitted_at == datetime(2026, 3, 2, 0, 15, tzinfo=timezone.utc)
    assert subs["cy"].submitted_at is None and subs["cy"].source == "nbgrader"
    assert subs["dee"].submitted_at == subs["bob"].submitted_at


def test_plain_folder_is_not_read_as_an_lms(tmp_path):
    (tmp_path / "ada.ipynb").write_bytes(NB)
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / f"{A}.ipynb").write_bytes(NB)
    subs = by_id(find_submissions(tmp_path, A, tmp_path / "unpack"))
    assert set(subs) == {"ada", "bob"} and {s.source for s in subs.values()} == {"folder"}


@pytest.mark.parametrize("name, expect", [
    ("smithjane_12345_678901_01_ngram.ipynb", ("12345", "smithjane", "01_ngram.ipynb", "678901", False)),
    ("smithjane_LATE_12345_678901_01_ngram.ipynb", ("12345", "smithjane", "01_ngram.ipynb", "678901", True)),
    ("smithjane_12345_678901_01_ngram-1.ipynb", ("12345", "smithjane", "01_ngram-1.ipynb", "678901", False)),
    ("01_ngram.ipynb", None),
    ("jane_01_ngram.ipynb", None),
])
def test_canvas_names(name, expect):
    e = lms.parse_canvas(name)
    assert (e and (e.user, e.name, e.filename, e.submission, e.late)) == expect


def test_canvas_unsuffixed():
    assert lms.canvas_unsuffixed("01_ngram-1.ipynb") == "01_ngram.ipynb"
    assert lms.canvas_unsuffixed("01_ngram-12.ipynb") == "01_ngram.ipynb"
    assert lms.canvas_unsuffixed("01_ngram.ipynb") == "01_ngram.ipynb"


def test_timestamp_unreadable(tmp_path):
    (tmp_path / "t.txt").write_text("not a time")
    assert lms.read_timestamp(tmp_path / "t.txt") is None
    assert lms.read_timestamp(tmp_path / "missing.txt") is None


def test_canvas_resubmission_beside_the_original_grades_the_newest_and_says_so(tmp_path):
    """R15: with 01_ngram.ipynb and 01_ngram-1.ipynb from one student the older one was graded,
    silently."""
    z = make_zip(tmp_path / "c.zip", {f"smithjane_1001_7_{A}.ipynb": NB, f"smithjane_1001_7_{A}-2.ipynb": NB,
                                      f"smithjane_1001_7_{A}-1.ipynb": NB})
    sub = by_id(find_submissions(z, A, tmp_path / "u"))["1001"]
    assert sub.path.name.endswith(f"{A}-2.ipynb") and sub.flags == ["several-notebooks"]
    assert f"graded {A}-2.ipynb, the newest of 3" in sub.detail


def test_canvas_names_canvas_writes_with_an_underscore_or_none(tmp_path):
    """R15: a sortable name with ``_`` (or none at all) made the file 'unknown-lms-name', graded
    under a made-up id while the student's own row said missing."""
    assert lms.parse_canvas(f"smith_jane_1005_2_{A}.ipynb").user == "1005"
    assert lms.parse_canvas(f"_LATE_1006_3_{A}.ipynb").late
    # the student's own file name comes last: it cannot move the file to another id
    e = lms.parse_canvas("doejohn_1002_9_smithjane_1001_5_01_ngram.ipynb")
    assert (e.user, e.filename) == ("1002", "smithjane_1001_5_01_ngram.ipynb")


def test_a_students_odd_file_name_does_not_stop_the_class(tmp_path):
    """R15: a backslash ``..`` in a student's own file name (legal on a Mac) refused the whole zip,
    and a name longer than the file system allows crashed the batch with OSError."""
    z = make_zip(tmp_path / "c.zip", {f"smithjane_1001_1_{A}.ipynb": NB,
                                      "doejohn_1002_2_..\\..\\evil.ipynb": NB,
                                      "leeann_1003_3_" + "é" * 200 + ".ipynb": NB})
    subs = by_id(find_submissions(z, A, tmp_path / "u"))
    assert set(subs) == {"1001", "1002", "1003"}
    assert subs["1002"].path.parent == tmp_path / "u" and subs["1002"].flags == ["renamed"]
    assert subs["1003"].path.name.endswith(".ipynb") and len(subs["1003"].path.name.encode()) <= 255
    assert not (tmp_path / "evil.ipynb").exists()


def test_utf8_names_in_a_zip_without_the_utf8_flag(tmp_path):
    """R15: a Moodle zip written without the UTF-8 flag (Info-ZIP's zip, the operating systems'
    own) had its names read as cp437: 'José García' came out 'Jos├⌐ Garc├¡a', so the roster no
    longer matched him (missing-notebook for him, not-on-roster for the submission)."""
    from lmcourse.grading.roster import Student, apply_roster

    real = "José García_102_assignsubmission_file_/01_ngram.ipynb".encode()
    stand_in = b"X" * len(real)                # ASCII: Python writes no UTF-8 flag for it
    z = make_zip(tmp_path / "m.zip", {stand_in.decode(): NB,
                                      f"Ann Lee_103_assignsubmission_file_/{A}.ipynb": NB})
    z.write_bytes(z.read_bytes().replace(stand_in, real))
    assert not zipfile.ZipFile(z).infolist()[0].flag_bits & 0x800
    subs = find_submissions(z, A, tmp_path / "u")
    assert by_id(subs)["102"].name == "José García"
    subs, marks = apply_roster(subs, {"s2": Student("s2", "José García"), "s3": Student("s3", "Ann Lee")})
    assert marks == {"s2": ["matched-by-name"], "s3": ["matched-by-name"]}
    assert by_id(subs)["s2"].path.name == f"{A}.ipynb"


def test_a_backslash_in_a_canvas_file_name_is_no_folder(tmp_path):
    """R15: Canvas's zip is flat; a student's own 'a\\smithjane_1001_5_01_ngram.ipynb' was made a
    folder (a backslash read as a separator), and so no file of theirs was found."""
    z = make_zip(tmp_path / "c.zip", {f"smithjane_1001_1_{A}.ipynb": NB,
                                      f"mallory_1003_9_a\\smithjane_1001_5_{A}.ipynb": NB})
    subs = by_id(find_submissions(z, A, tmp_path / "u"))
    assert set(subs) == {"1001", "1003"} and subs["1001"].path.name == f"smithjane_1001_1_{A}.ipynb"
    assert subs["1003"].flags == ["renamed"] and subs["1003"].path.parent == tmp_path / "u"
