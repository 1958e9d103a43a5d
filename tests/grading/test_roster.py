"""The roster (:mod:`lmcourse.grading.roster`): missing students, unknown ones, name matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmcourse.grading.ingest import Submission
from lmcourse.grading.roster import RosterError, Student, apply_roster, names_match, read_roster


def write(tmp_path, text) -> Path:
    p = tmp_path / "roster.csv"
    p.write_text(text)
    return p


def test_read_and_apply(tmp_path):
    roster = read_roster(write(tmp_path, "ID,Name,Email,Section,Extension\n"
                                         "1001,Jane Smith,jane@example.edu,A,\n"
                                         "1002,John Doe,john@example.edu,B,2d\n"
                                         "1003,Ann Lee,ann@example.edu,A,\n"
                                         "s9,Cy Young,cy@example.edu,B,\n"))
    assert roster["1002"].extension == "2d" and roster["1001"].email == "jane@example.edu"
    subs = [Submission("1001", Path("a"), name="smithjane", source="canvas", lms_user="1001"),
            Submission("1002", Path("b"), name="doejohn", source="canvas", lms_user="1002"),
            Submission("77", Path("c"), name="Cy Young", source="moodle", lms_user="77"),   # participant id
            Submission("2001", Path("d"), name="mallorye", source="canvas", lms_user="2001")]
    out, marks = apply_roster(subs, roster)
    got = {s.student: s for s in out}
    assert set(got) == {"1001", "1002", "1003", "s9", "2001"}
    assert got["1003"].path is None and "roster" in got["1003"].detail
    assert got["s9"].lms_user == "77" and marks["s9"] == ["matched-by-name"]
    assert marks["2001"] == ["not-on-roster"]
    assert got["1001"].name == "Jane Smith" and "1001" not in marks


def test_canvas_gradebook_export_is_a_roster(tmp_path):
    roster = read_roster(write(tmp_path,
                               "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (4411)\n"
                               "    Points Possible,,,,,20\n"
                               '"Smith, Jane",1001,S1001,jsmith,Sec A,\n'))
    assert list(roster) == ["1001"]
    assert (roster["1001"].name, roster["1001"].sis_id, roster["1001"].login) == ("Smith, Jane", "S1001", "jsmith")


@pytest.mark.parametrize("text, match", [("name\nJane\n", "no id column"),
                                         ("id,name\n1,A\n1,B\n", "twice"),
                                         ("id,extension\n1,a week\n", "line 2")])
def test_bad_rosters(tmp_path, text, match):
    with pytest.raises(RosterError, match=match):
        read_roster(write(tmp_path, text))


def test_names_match():
    assert names_match("smithjane", "Jane Smith") and names_match("smithjane", "Smith, Jane")
    assert names_match("Jane Smith", "jane  smith")
    assert not names_match("smithjan", "Jane Smith") and not names_match("", "Jane Smith")


def test_ambiguous_name_is_not_matched():
    roster = {"1": Student("1", "Jo Li"), "2": Student("2", "Li Jo")}
    out, marks = apply_roster([Submission("9", Path("x"), name="lijo")], roster)
    assert marks["9"] == ["not-on-roster"]


@pytest.mark.parametrize("data", [
    "id;name;email\n1001;José García;j@x\n".encode(),                  # Excel with a decimal comma
    "id,name,email\n1001,José García,j@x\n".encode("cp1252"),         # Excel's plain CSV on Windows
    "id\tname\temail\n1001\tJosé García\tj@x\n".encode("utf-16"),     # Excel's Unicode text
    "\ufeffid,name,email\r\n1001,José García,j@x\r\n".encode("utf-8"),  # CSV UTF-8 (BOM)
], ids=["semicolon", "cp1252", "utf16", "bom"])
def test_rosters_as_spreadsheets_save_them(tmp_path, data):
    """R15: semicolons were 'no id column', cp1252 and UTF-16 a UnicodeDecodeError traceback."""
    p = tmp_path / "roster.csv"
    p.write_bytes(data)
    assert read_roster(p)["1001"].name == "José García" and read_roster(p)["1001"].email == "j@x"


def test_names_match_in_any_script_and_normal_form():
    """R15: letters outside a-z were dropped, so 'Zoë Li' matched the roster's 'Zo Li' (another
    person), NFD 'José' did not match NFC 'José', and non-Latin names never matched."""
    assert not names_match("Zoë Li", "Zo Li")
    assert names_match("Jose\u0301 Garci\u0301a", "José García") and names_match("Zoë Li", "Zoe Li")
    assert names_match("李雷", "李雷") and not names_match("李雷", "韩梅梅")
    assert names_match("سارا احمدی", "احمدی سارا")
    subs = [Submission("77", None, name="Zoë Li", source="moodle", lms_user="77")]
    subs, marks = apply_roster(subs, {"s1": Student("s1", "Zo Li")})
    assert marks == {"77": ["not-on-roster"]}


def test_two_accounts_showing_one_name_match_neither():
    """R15: Moodle ids are never on the roster, so a student who set their display name to a
    classmate's took that classmate's row whenever their participant id sorted first."""
    subs = [Submission("101", None, name="Jane Smith", source="moodle", lms_user="101"),   # Mallory, renamed
            Submission("102", None, name="Jane Smith", source="moodle", lms_user="102")]   # the real Jane
    subs, marks = apply_roster(subs, {"s1": Student("s1", "Jane Smith"), "s9": Student("s9", "Mallory Evil")})
    assert marks == {"101": ["not-on-roster"], "102": ["not-on-roster"]}
    assert {s.student for s in subs} == {"101", "102", "s1", "s9"}
