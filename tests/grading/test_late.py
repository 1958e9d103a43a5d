"""Due times, extensions and each late policy (:mod:`lmcourse.grading.late`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from lmcourse.grading.late import LateError, LatePolicy, apply, assess, parse_duration, parse_time

DUE = parse_time("2026-03-01T23:59+01:00")


def at(text):
    return parse_time(text)


def test_due_needs_a_timezone():
    assert DUE == datetime(2026, 3, 1, 22, 59, tzinfo=timezone.utc)
    assert parse_time("2026-03-01T22:59Z") == DUE
    with pytest.raises(LateError, match="no timezone"):
        parse_time("2026-03-01T23:59")
    with pytest.raises(LateError, match="ISO 8601"):
        parse_time("next friday")


@pytest.mark.parametrize("text, hours", [("48h", 48), ("2d", 48), ("1d12h", 36), ("90m", 1.5),
                                         ("2 days", 48), ("0", 0), ("", 0)])
def test_durations(text, hours):
    assert parse_duration(text) == timedelta(hours=hours)


def test_bad_duration():
    with pytest.raises(LateError, match="48h"):
        parse_duration("a week")


@pytest.mark.parametrize("text, kind, rate, unit, floor, grace", [
    ("none", "none", 0, "day", 0, 0),
    ("zero", "zero", 0, "day", 0, 0),
    ("zero,grace=10m", "zero", 0, "day", 0, 600),
    ("10%/day", "rate", 0.1, "day", 0, 0),
    ("10%/day,floor=50%", "rate", 0.1, "day", 0.5, 0),
    ("2.5%/hour, grace=15m", "rate", 0.025, "hour", 0, 900),
])
def test_policy_syntax(text, kind, rate, unit, floor, grace):
    p = LatePolicy.parse(text)
    assert (p.kind, p.rate, p.unit, p.floor, p.grace.total_seconds()) == (kind, rate, unit, floor, grace)
    assert LatePolicy.parse(p.describe()) == p


@pytest.mark.parametrize("text", ["10", "10%/week", "0%/day", "150%/day", "10%/day,floor=x", "zero,cap=1"])
def test_policy_refused(text):
    with pytest.raises(LateError):
        LatePolicy.parse(text)


def test_none_reports_but_never_penalises():
    late = assess(LatePolicy.parse("none"), DUE, submitted_at=at("2026-03-03T10:00Z"))
    assert late.late and late.share == 0 and late.flags == ["late"] and late.hours() == "35.02"


def test_zero():
    p = LatePolicy.parse("zero")
    assert assess(p, DUE, submitted_at=at("2026-03-01T22:59Z")).share == 0      # at the due time: on time
    assert assess(p, DUE, submitted_at=at("2026-03-01T23:00Z")).share == 1.0
    assert apply(17, 1.0) == (17, 0)


def test_grace():
    p = LatePolicy.parse("zero,grace=15m")
    assert assess(p, DUE, submitted_at=at("2026-03-01T23:10Z")).share == 0
    assert assess(p, DUE, submitted_at=at("2026-03-01T23:20Z")).share == 1.0


def test_per_day_counts_started_days_down_to_the_floor():
    p = LatePolicy.parse("10%/day,floor=50%")
    share = [assess(p, DUE, submitted_at=DUE + timedelta(hours=h)).share for h in (0.01, 24, 25, 71, 24 * 9)]
    assert share == pytest.approx([0.1, 0.1, 0.2, 0.3, 0.5])
    assert apply(20, 0.3) == (6, 14)


def test_per_hour():
    p = LatePolicy.parse("5%/hour")
    assert assess(p, DUE, submitted_at=DUE + timedelta(minutes=61)).share == pytest.approx(0.1)
    assert assess(p, DUE, submitted_at=DUE + timedelta(days=3)).share == 1.0    # no floor: down to 0


def test_extensions():
    p = LatePolicy.parse("zero")
    t = at("2026-03-02T20:00Z")
    assert assess(p, DUE, "", t).share == 1.0
    assert assess(p, DUE, "2d", t).share == 0 and assess(p, DUE, "2d", t).due == DUE + timedelta(days=2)
    assert assess(p, DUE, "2026-03-02T21:00Z", t).share == 0      # a personal due time
    assert assess(p, DUE, "2026-03-02T19:00Z", t).share == 1.0


def test_canvas_marker_without_a_time():
    assert assess(LatePolicy.parse("zero"), None, late_marker=True).share == 1.0
    late = assess(LatePolicy.parse("10%/day"), None, late_marker=True)
    assert late.share == pytest.approx(0.1) and "late-time-unknown" in late.flags and late.late_by is None
    ext = assess(LatePolicy.parse("zero"), DUE, "2d", late_marker=True)   # the marker cannot know the extension
    assert ext.share == 0 and ext.flags == ["late-time-unknown"]
    assert assess(LatePolicy.parse("zero"), None).share == 0
    on_time = assess(LatePolicy.parse("zero"), DUE, marks_late=True)     # Canvas, no LATE: on time
    assert on_time.late is False and on_time.share == 0 and not on_time.note


def test_no_time_in_the_format():
    late = assess(LatePolicy.parse("zero"), DUE)
    assert late.share == 0 and late.late is None and "no submission time" in late.note


def test_the_grade_run_glue(tmp_path):
    """semester.arrange / assess_all / annotate on an nbgrader layout with timestamps and a
    roster: the late columns and flags land on the results, the roster's extension counts."""
    from types import SimpleNamespace

    from lmcourse.grading.ingest import find_submissions
    from lmcourse.grading.semester import ClassSetup, annotate, arrange, assess_all

    nb = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    for student, stamp in [("ada", "2026-03-01 21:00:00 UTC"), ("bob", "2026-03-02 23:30:00 UTC"),
                           ("cy", "2026-03-02 23:30:00 UTC")]:
        d = tmp_path / "submitted" / student / "01_ngram"
        d.mkdir(parents=True)
        (d / "01_ngram.ipynb").write_bytes(nb)
        (d / "timestamp.txt").write_text(stamp)
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,extension\nada,Ada,\nbob,Bob,\ncy,Cy,2d\ndee,Dee,\n")
    setup = ClassSetup.from_options(str(roster), "2026-03-01T23:59+01:00", "10%/day,floor=50%")
    subs, marks = arrange(find_submissions(tmp_path, "01_ngram", tmp_path / "x"), setup)
    late = assess_all(subs, setup)
    results = [SimpleNamespace(student=s.student, status="graded" if s.path else "missing-notebook",
                               score=10.0, flags=[], detail="", extra={}) for s in subs]
    assert annotate(results, subs, marks, late) == []
    got = {r.student: r for r in results}
    assert got["ada"].flags == [] and got["ada"].extra["final_score"] == "10"
    assert got["bob"].flags == ["late"] and got["bob"].extra["late_hours"] == "24.52"
    assert (got["bob"].extra["penalty_pct"], got["bob"].extra["final_score"]) == ("20", "8")   # 2 started days
    assert got["cy"].flags == [] and got["cy"].extra["penalty"] == "0"                      # 2 days' extension
    assert got["dee"].status == "missing-notebook" and got["dee"].extra["name"] == "Dee"


def test_policy_messages_say_what_is_wrong():
    """R15: ``zero,floor=50%`` said 'unknown option'; a bad grace did not name --late-policy."""
    with pytest.raises(LateError, match="floor= goes with a rate"):
        LatePolicy.parse("zero,floor=50%")
    with pytest.raises(LateError, match="--late-policy"):
        LatePolicy.parse("10%/day,grace=-5m")


def test_a_regrade_counts_each_untimed_submission_once(tmp_path):
    """R15: after ``--student`` on a Moodle class of 3 the summary said '4 submissions carry no
    submission time' (the regraded student's old result, passed along for the change line, was
    counted too)."""
    from types import SimpleNamespace

    from lmcourse.grading.ingest import find_submissions
    from lmcourse.grading.semester import ClassSetup, annotate, assess_all

    for who in ("Ann Lee_103", "Jane Smith_101", "Bo Kim_104"):
        d = tmp_path / f"{who}_assignsubmission_file_"
        d.mkdir()
        (d / "01_ngram.ipynb").write_bytes(b"{}")
    setup = ClassSetup.from_options(None, "2026-03-01T23:59+01:00", "10%/day")
    subs = find_submissions(tmp_path, "01_ngram", tmp_path / "x")
    late = assess_all(subs, setup)

    def result(s):
        return SimpleNamespace(student=s.student, status="graded", score=1.0, flags=[], detail="", extra={})
    results = [result(s) for s in subs] + [result(subs[0])]     # the regraded one's earlier result
    assert annotate(results, subs, {}, late) == [
        "3 submissions carry no submission time (this download format has none): no late penalty applied to them"]


def test_student_given_by_its_lms_id_is_pointed_to_the_roster_id(tmp_path):
    """R15: ``--student 102`` (the Moodle participant id a TA sees in Moodle) on a class graded
    under roster ids said 'no such student' and listed ids without saying which one was meant."""
    from lmcourse.grading.ingest import Submission
    from lmcourse.grading.semester import only_one

    subs = [Submission("s1", None, lms_user="101"), Submission("s2", None, lms_user="102")]
    with pytest.raises(LookupError, match="that is the LMS's id of s2.*use --student s2"):
        only_one(subs, "102", tmp_path)


def test_grades_csv_name_cannot_run_as_a_formula():
    """R15: the name column of grades.csv (a Moodle display name, the student's choice) went in
    as it was: '=HYPERLINK(...)' ran when the TA opened grades.csv in a spreadsheet."""
    from types import SimpleNamespace

    from lmcourse.grading.ingest import Submission
    from lmcourse.grading.semester import annotate

    subs = [Submission("77", None, name='=HYPERLINK("x")', source="moodle"), Submission("78", None, name="Ann")]
    results = [SimpleNamespace(student=s.student, status="graded", score=1.0, flags=[], detail="", extra={})
               for s in subs]
    annotate(results, subs, {}, {})
    assert [r.extra["name"] for r in results] == ['\'=HYPERLINK("x")', "Ann"]


def test_a_zone_name_keeps_extensions_on_the_clock_across_dst():
    """R15: a '3d' extension from a Friday 23:59 CEST deadline ended Monday 22:59 on the clock
    (72 hours, but the clocks went back on Sunday), so a student handing in at 23:30 was late. A
    zone name in --due counts days on the clock; an offset still counts 24 hours a day."""
    from lmcourse.grading.late import format_time, personal_due

    handed_in = at("2026-10-26T22:30Z")                       # Monday 23:30 in Berlin
    zoned = parse_time("2026-10-23T23:59 Europe/Berlin")
    assert parse_time("2026-10-23T23:59[Europe/Berlin]") == zoned
    assert personal_due(zoned, "3d") == at("2026-10-26T23:59+01:00")
    assert not assess(LatePolicy.parse("10%/day"), zoned, "3d", submitted_at=handed_in).late
    fixed = parse_time("2026-10-23T23:59+02:00")
    assert assess(LatePolicy.parse("10%/day"), fixed, "3d", submitted_at=handed_in).late
    assert parse_time(format_time(zoned)) == zoned and format_time(zoned).endswith("[Europe/Berlin]")
    with pytest.raises(LateError, match="no timezone called"):
        parse_time("2026-10-23T23:59 Europe/Nowhere")
    with pytest.raises(LateError, match="the offset is not Europe/Berlin's"):
        parse_time("2026-10-23T23:59+01:00[Europe/Berlin]")


def test_a_bare_date_is_answered_with_suggestions_that_parse():
    """R15: ``--due 2026-03-01`` suggested '2026-03-01+01:00', which is refused in turn."""
    with pytest.raises(LateError) as exc:
        parse_time("2026-03-01")
    said = str(exc.value)
    assert "2026-03-01T23:59+01:00" in said
    for suggestion in ("2026-03-01T23:59+01:00", "2026-03-01T23:59Z", "2026-03-01T23:59 Europe/Berlin"):
        assert suggestion in said and parse_time(suggestion)
