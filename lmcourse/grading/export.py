"""``lmcourse grade export``: the grades back to the LMS.

Reads what ``lmcourse grade`` left in ``OUT`` (``grades.csv``: autograded points per test, status,
flags and the late penalty's share; ``students.json``: names and LMS ids; ``feedback/``), the
hand-graded points and comments a TA entered in nbgrader's formgrader (the gradebook the grade
run wrote), and optionally the roster (:mod:`.roster`, for e-mail addresses, sections and SIS
ids). Per test cell the points are the hand-given ones where formgrader has them (a TA may also
overrule an autograded test there), else the autograded ones. Then
``raw = auto + hand``, ``penalty = raw x the late share`` (:mod:`.late`), ``final = raw - penalty``.

Written to ``OUT/export/`` (or ``--to``: a new or empty folder, or an earlier export's, which is
replaced; any other folder is refused, never emptied):

- ``grades.csv``: one row per student: ids, name, e-mail, section, status, flags, auto, hand,
  raw, late hours, penalty %, penalty, final, max, then the points of every test and
  hand-graded answer (per-question columns); a hand-graded answer not graded yet counts 0 and
  the row is flagged ``needs-hand-grading``;
- ``canvas.csv``: Canvas's gradebook import (``Student, ID, SIS User ID, SIS Login ID,
  Section``, then one column for the assignment, ``--canvas-column``, e.g. ``Lab 1 (4411)``
  as in Canvas's own export so that Canvas updates that assignment instead of adding one);
  ``ID`` is the Canvas user id (the student id of a Canvas download);
- ``moodle.csv``: for Moodle's grade import (*Grades > Import > CSV file*): ``ID number``,
  ``Email address``, ``Full name``, the score column and ``Feedback``; map the first or second
  to the user field of the same name when importing;
- ``feedback/<student>/``: the feedback page and ``grade.txt`` (points, penalty, the TA's
  comments) per student, for any LMS or e-mail;
- ``moodle_feedback.zip``, where the students came from a Moodle download: Moodle's
  *Upload multiple feedback files in a zip*: one folder per student named as in the download,
  ``<Full Name>_<participant id>_assignfeedback_file_/`` (Moodle reads the participant id, the
  part after the first ``_``), holding the same two files.

Only the pages in ``feedback/`` (hidden-test source removed by ``lmcourse grade`` and checked
absent again here) and the scores leave the TA's folder.

Why one module: one command that reads the grade run once into one table of
rows and writes it four ways; split, the parts would only pass that table to each other.
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .roster import Student
from .semester import spreadsheet_text as _text
from .similarity_report import COLUMN as SIMILARITY_COLUMN

BASE = ("student", "assignment", "score", "max_score", "status", "flags", "detail")
LATE_COLUMNS = ("submitted_at", "due", "late_hours", "penalty_pct")
MARKER = ".lmcourse-export"     # in every export folder: only a folder with it is ever replaced


class ExportError(Exception):
    """Nothing to export (no grade run in that folder), or a file that cannot be read."""


@dataclass
class Row:
    student: str
    status: str
    flags: list[str]
    auto: dict[str, float]               # test id -> autograded points
    hand: dict[str, float | None] = field(default_factory=dict)   # answer id -> hand points
    comments: list[str] = field(default_factory=list)
    penalty_share: float = 0.0
    late_hours: str = ""
    info: dict[str, str] = field(default_factory=dict)           # name, lms ids, ... (students.json)
    detail: str = ""                                             # why, for a status other than graded


def _f(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def read_grade_run(out: Path) -> tuple[str, list[str], float, list[Row]]:
    """(assignment, the per-question column ids, max score, rows) from ``OUT/grades.csv``."""
    path = Path(out) / "grades.csv"
    if not path.is_file():
        raise ExportError(f"{path}: not found (run `lmcourse grade ... --out {out}` first)")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        # a similarity report's column (lmcourse grade similarity) is a flag for the TA, not a question
        known = set(BASE) | set(LATE_COLUMNS) | {"name", "raw_score", "penalty", "final_score", "auto_max",
                                                 SIMILARITY_COLUMN}
        ids = [h for h in header if h not in known]
        records = list(reader)
    if not records:
        raise ExportError(f"{path}: no students")
    info = {}
    manifest = Path(out) / "students.json"
    if manifest.is_file():
        info = json.loads(manifest.read_text(encoding="utf-8"))
    rows = []
    for r in records:
        rows.append(Row(r["student"], r["status"], [x for x in r["flags"].split(";") if x],
                        {i: _f(r[i]) for i in ids if r.get(i, "") != ""},
                        penalty_share=_f(r.get("penalty_pct", "")) / 100, late_hours=r.get("late_hours", ""),
                        info={k: str(v) for k, v in info.get(r["student"], {}).items() if v is not None},
                        detail=r.get("detail", "")))
    return records[0]["assignment"], ids, _f(records[0]["max_score"]), rows


def read_hand_grades(db: Path, assignment: str, rows: list[Row]) -> list[str]:
    """Hand-given points and comments from nbgrader's gradebook into ``rows``; the ids of the
    hand-graded answers (returned) come from the gradebook's cells."""
    from nbgrader.api import Gradebook, MissingEntry

    manual: list[str] = []
    with Gradebook(f"sqlite:///{Path(db).resolve()}") as gb:
        try:
            nb = gb.find_notebook(assignment, assignment)
        except MissingEntry as exc:
            raise ExportError(f"{db}: no assignment {assignment} in this gradebook") from exc
        manual = [c.name for c in nb.grade_cells if c.cell_type == "markdown"]
        for row in rows:
            try:
                sub = gb.find_submission_notebook(assignment, assignment, row.student)
            except MissingEntry:
                continue
            for g in sub.grades:
                if g.manual_score is not None:
                    row.hand[g.name] = float(g.manual_score) + float(g.extra_credit or 0)
                elif g.name in manual:
                    # None: waits for a TA. An answer left blank was scored 0 by nbgrader's
                    # autograde (auto_score set, nothing to grade by hand): that 0 stands
                    row.hand[g.name] = None if g.auto_score is None else float(g.auto_score)
            for c in sub.comments:
                if c.manual_comment:
                    row.comments.append(f"{c.name}: {c.manual_comment.strip()}")
    return manual


def _n(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def _money(x: float) -> str:
    return f"{round(x, 4):g}"


def _moodle_folder(name: str, participant: str) -> str:
    clean = re.sub(r"[_/\\:*?\"<>|]+", " ", name).strip() or "Participant"
    return f"{clean}_{participant}_assignfeedback_file_"


def export(out: Path, dest: Path | None = None, gradebook: Path | None = None,
           roster: dict[str, Student] | None = None, canvas_column: str | None = None,
           moodle_column: str | None = None, hidden: list[str] | None = None) -> dict[str, object]:
    """Write the export files; returns a summary (paths, counts, warnings)."""
    out = Path(out)
    asg, ids, max_score, rows = read_grade_run(out)
    manual = read_hand_grades(gradebook, asg, rows) if gradebook is not None and Path(gradebook).is_file() else []
    warnings: list[str] = []
    if gradebook is not None and not Path(gradebook).is_file():
        warnings.append(f"no gradebook at {gradebook}: hand-graded answers count 0")
    qcols = ids + [m for m in manual if m not in ids]
    dest = Path(dest) if dest else out / "export"
    _clear(dest, out)
    (dest / "feedback").mkdir(parents=True)
    (dest / MARKER).write_text("written by lmcourse grade export; the whole folder is replaced by the next one\n",
                               encoding="utf-8")
    roster = roster or {}
    table = []
    for r in rows:
        st = roster.get(r.student)
        name = _text((st.name if st and st.name else "") or r.info.get("name", "") or r.student)
        points = {}
        for q in qcols:
            hand = r.hand.get(q)
            points[q] = hand if hand is not None else r.auto.get(q, 0.0)
        pending = [q for q in manual if q in r.hand and r.hand[q] is None]   # in the gradebook, not graded
        flags = list(r.flags) + (["needs-hand-grading"] if pending else [])
        hand_total = sum(v for q, v in r.hand.items() if v is not None)
        raw = sum(points.values())
        auto_total = raw - hand_total
        penalty = round(raw * r.penalty_share, 4)
        final = round(raw - penalty, 4)
        table.append({
            "student": r.student, "name": name, "email": (st.email if st else "") or r.info.get("email", ""),
            "section": (st.section if st else "") or r.info.get("section", ""),
            "lms_user": r.info.get("lms_user", ""), "sis_id": st.sis_id if st else "",
            "login": st.login if st else "", "id_number": st.id_number if st else "",
            "source": r.info.get("source", ""), "status": r.status, "detail": r.detail, "flags": ";".join(flags),
            "auto_score": _money(auto_total), "hand_score": _money(hand_total), "raw_score": _money(raw),
            "late_hours": r.late_hours, "penalty_pct": _money(r.penalty_share * 100) if r.penalty_share else "0",
            "penalty": _money(penalty), "final_score": _money(final), "max_score": _money(max_score),
            **{q: _money(points[q]) for q in qcols}, "_comments": r.comments, "_pending": pending,
        })
    cols = ["student", "name", "email", "section", "status", "flags", "auto_score", "hand_score", "raw_score",
            "late_hours", "penalty_pct", "penalty", "final_score", "max_score", *qcols]
    _write_csv(dest / "grades.csv", cols, table)
    col = canvas_column or asg
    canvas = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", col],
              ["    Points Possible", "", "", "", "", _money(max_score)]]
    canvas += [[t["name"], t["lms_user"] if t["source"] == "canvas" and t["lms_user"] else t["student"],
                t["sis_id"], t["login"], t["section"], t["final_score"]] for t in table]
    _write_rows(dest / "canvas.csv", canvas)
    mcol = moodle_column or asg
    moodle = [["ID number", "Email address", "Full name", mcol, "Feedback"]]
    moodle += [[t["id_number"] or t["student"], t["email"], t["name"], t["final_score"], _summary_line(t)]
               for t in table]
    _write_rows(dest / "moodle.csv", moodle)
    no_mail = [t["student"] for t in table if not t["email"]]
    if no_mail:
        warnings.append(f"{_n(len(no_mail), 'student has', 'students have')} no e-mail address "
                        f"({', '.join(no_mail[:5])}{' ...' if len(no_mail) > 5 else ''}; "
                        f"{'not on the roster, or none there' if roster else 'give --roster'}): "
                        "in moodle.csv map 'ID number' instead")
    hidden = hidden or []
    bundle: list[tuple[str, Path]] = []
    for t in table:
        folder = dest / "feedback" / t["student"]
        folder.mkdir()
        page = out / "feedback" / f"{t['student']}.html"
        if page.is_file():
            text = page.read_text(encoding="utf-8")
            plain = html.unescape(text)
            if any(line in plain for line in hidden):
                warnings.append(f"{t['student']}: feedback page withheld (it shows hidden-test lines)")
            else:
                (folder / "feedback.html").write_text(text, encoding="utf-8")
        (folder / "grade.txt").write_text(_grade_text(t, asg, qcols, manual), encoding="utf-8")
        if t["source"] == "moodle" and t["lms_user"]:
            bundle.append((_moodle_folder(t["name"], t["lms_user"]), folder))
    files = {"grades": dest / "grades.csv", "canvas": dest / "canvas.csv", "moodle": dest / "moodle.csv",
             "feedback": dest / "feedback"}
    if bundle:
        z = dest / "moodle_feedback.zip"
        with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
            for prefix, folder in bundle:
                for f in sorted(folder.iterdir()):
                    zf.write(f, f"{prefix}/{f.name}")
        files["moodle_feedback"] = z
    pending = sum(bool(t["_pending"]) for t in table)
    if pending:
        warnings.append(f"{_n(pending, 'student has', 'students have')} hand-graded answers not graded yet "
                        "in formgrader (they count 0; flag needs-hand-grading)")
    return {"files": files, "students": len(table), "warnings": warnings, "rows": table}


def _clear(dest: Path, out: Path) -> None:
    """Make room for an export in ``dest``: a folder that does not exist or is empty is used; one
    that an earlier export wrote (its ``MARKER`` file) is replaced; anything else is refused,
    never deleted (``--to ~/Desktop`` or ``--to`` the grade run's own folder)."""
    if not dest.exists() and not dest.is_symlink():
        return
    if dest.is_symlink() or not dest.is_dir():
        raise ExportError(f"{dest}: exists and is not a folder: give --to a new or empty folder")
    here, run = dest.resolve(), Path(out).resolve()
    if here == run or here in run.parents:
        raise ExportError(f"{dest}: holds the grade run itself ({out}): give --to a new or empty folder")
    if not any(dest.iterdir()):
        return
    if not (dest / MARKER).is_file():
        raise ExportError(f"{dest}: not empty and not written by an earlier export (nothing was deleted): "
                          "give --to a new or empty folder")
    shutil.rmtree(dest)


def hidden_lines(out: Path, assignment: str) -> list[str]:
    """The hidden-test lines of the assignment's source (the copy the grade run keeps in
    ``OUT/template/``): the same rule as the grade run's own leak check."""
    import nbformat

    from .template import hidden_test_lines

    src = Path(out) / "template" / "source" / assignment / f"{assignment}.ipynb"
    return hidden_test_lines(nbformat.read(src, as_version=4)) if src.is_file() else []


def main(argv: list[str], prog: str = "lmcourse grade export") -> int:
    import argparse
    import sys

    from .roster import RosterError, read_roster
    from .semester import read_run

    p = argparse.ArgumentParser(prog=prog, description="merge formgrader's hand-graded points with a grade "
                                "run's autograded ones; write grades.csv, Canvas and Moodle import files "
                                "and the feedback bundle")
    p.add_argument("--out", default="build/grades", help="the grade run's output folder (default: build/grades)")
    p.add_argument("--to", default=None, help="where the files go (default: OUT/export)")
    p.add_argument("--gradebook", default=None,
                   help="nbgrader gradebook with the hand grading (default: the one the grade run wrote; "
                        "'none': autograded points only)")
    p.add_argument("--roster", default=None, help="roster CSV (default: the grade run's)")
    p.add_argument("--canvas-column", default=None,
                   help="the assignment's column in Canvas, as in Canvas's export, e.g. 'Lab 1 (4411)'")
    p.add_argument("--moodle-column", default=None, help="the score column's name in moodle.csv")
    args = p.parse_args(argv)
    out = Path(args.out)
    run = read_run(out)
    gb = args.gradebook if args.gradebook is not None else run.get("gradebook") or None
    gradebook = None if gb is None or gb.lower() == "none" else Path(gb)
    roster_path = args.roster or run.get("roster") or None
    try:
        roster = read_roster(Path(roster_path)) if roster_path else None
        asg = run.get("assignment") or read_grade_run(out)[0]
        summary = export(out, Path(args.to) if args.to else None, gradebook, roster, args.canvas_column,
                         args.moodle_column, hidden_lines(out, asg))
    except (ExportError, RosterError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    for w in summary["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{summary['students']} students" + (f"; hand grading from {gradebook}" if gradebook else ""))
    for what, path in summary["files"].items():
        print(f"  {what:16s} {path}")
    return 0


def _summary_line(t: dict) -> str:
    s = f"autograded {t['auto_score']}, by hand {t['hand_score']}"
    if _f(t["penalty"]):
        s += f", late penalty -{t['penalty']} ({t['penalty_pct']}%)"
    return s + f": {t['final_score']}/{t['max_score']}"


def _grade_text(t: dict, asg: str, qcols: list[str], manual: list[str]) -> str:
    lines = [f"{asg}: {t['final_score']} of {t['max_score']} points", "",
             f"autograded tests: {t['auto_score']}", f"graded by hand:   {t['hand_score']}"]
    if _f(t["penalty"]):
        lines.append(f"late penalty:     -{t['penalty']} ({t['penalty_pct']}% of {t['raw_score']}; "
                     f"{t['late_hours']} h late)" if t["late_hours"] else
                     f"late penalty:     -{t['penalty']} ({t['penalty_pct']}% of {t['raw_score']})")
    if t["status"] != "graded":
        lines.append(f"status: {t['status']}" + (f": {t['detail']}" if t.get("detail") else ""))
    lines += ["", "points per question:"] + [f"  {q}: {t[q]}" + (" (not graded yet)" if q in t["_pending"] else "")
                                             for q in qcols]
    if t["_comments"]:
        lines += ["", "comments:"] + [f"  {c}" for c in t["_comments"]]
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, cols: list[str], table: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for t in table:
            w.writerow([t[c] for c in cols])


def _write_rows(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
