"""What a grade run adds around the notebooks: the roster, the deadline, the run's record.

The grade pipeline calls, in order:

1. :func:`arrange` after finding the submissions: the roster applied (:mod:`.roster`);
2. :func:`assess_all`: each submission against its due time (:mod:`.late`);
3. after grading, :func:`annotate`: roster and late flags and the late columns on each result.
   These depend on the roster and the deadline, not on the notebook, so they are added after
   the cached, per-notebook result and never change its cache key: a new due date or a new
   roster regrades nothing;
4. :func:`write_record`: ``OUT/students.json`` (names and LMS ids, which ``lmcourse grade
   export`` needs for the LMS files) and ``OUT/run.json`` (assignment, gradebook, roster, due
   time and late policy of the run, so that ``export`` and a ``--student`` regrade use the same).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .ingest import Submission
from .late import Lateness, LatePolicy, assess, columns, format_time, parse_time
from .roster import Student, apply_roster, read_roster


@dataclass
class ClassSetup:
    roster: dict[str, Student] | None = None
    roster_path: str = ""
    due: datetime | None = None
    policy: LatePolicy = field(default_factory=LatePolicy)
    policy_text: str = "none"

    @classmethod
    def from_options(cls, roster: str | None = None, due: str | None = None,
                     late_policy: str | None = None) -> ClassSetup:
        """From the command line's strings; raises RosterError / LateError with a clear message."""
        policy = LatePolicy.parse(late_policy or "none")
        return cls(read_roster(Path(roster)) if roster else None, str(Path(roster).resolve()) if roster else "",
                   parse_time(due) if due else None, policy, policy.describe())


def spreadsheet_text(value: str) -> str:
    """A name as a CSV cell: one that starts like a formula (``=``, ``+``, ``-``, ``@``; a student
    may choose their LMS display name) gets a leading ``'`` so that a spreadsheet opening the
    file shows it instead of running it."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def arrange(subs: list[Submission], setup: ClassSetup) -> tuple[list[Submission], dict[str, list[str]]]:
    if setup.roster is None:
        return subs, {}
    return apply_roster(subs, setup.roster)


def assess_all(subs: list[Submission], setup: ClassSetup) -> dict[str, Lateness]:
    out = {}
    for sub in subs:
        st = (setup.roster or {}).get(sub.student)
        out[sub.student] = assess(setup.policy, setup.due, st.extension if st else "", sub.submitted_at,
                                  sub.late_marker, marks_late=sub.source == "canvas")
    return out


def annotate(results, subs: list[Submission], marks: dict[str, list[str]],
             lateness: dict[str, Lateness]) -> list[str]:
    """In place on each result (``flags``, ``detail``, ``extra``: the name and late columns of
    ``grades.csv``); returns batch notes for the summary (e.g. that the format carries no
    submission times)."""
    names = {s.student: s.name for s in subs}
    notes = []
    untimed: set[str] = set()      # by student: a --student regrade passes that student's old result too
    for r in results:
        for f in marks.get(r.student, []):
            if f not in r.flags:
                r.flags.append(f)
        late = lateness.get(r.student)
        if r.status == "missing-notebook":
            late = None
        if late is not None:
            for f in late.flags:
                if f not in r.flags:
                    r.flags.append(f)
            if late.note and late.late is not False and "no submission time" not in late.note:
                r.detail = "; ".join(x for x in [r.detail, late.note] if x)
            if "no submission time" in late.note:
                untimed.add(r.student)
        r.extra = {"name": spreadsheet_text(names.get(r.student, "")), **columns(late, r.score)}
    if untimed:
        notes.append(f"{len(untimed)} submissions carry no submission time (this download format has none): "
                     "no late penalty applied to them")
    return notes


def write_record(out: Path, assignment: str, subs: list[Submission], setup: ClassSetup,
                 gradebook: Path | None) -> None:
    out = Path(out)
    students = {s.student: {"name": s.name, "source": s.source, "lms_user": s.lms_user,
                            "lms_submission": s.lms_submission} for s in subs}
    (out / "students.json").write_text(json.dumps(students, indent=1, sort_keys=True), encoding="utf-8")
    run = {"assignment": assignment, "gradebook": str(Path(gradebook).resolve()) if gradebook else "",
           "roster": setup.roster_path, "due": format_time(setup.due) if setup.due else "",
           "late_policy": setup.policy_text}
    (out / "run.json").write_text(json.dumps(run, indent=1), encoding="utf-8")


def read_run(out: Path) -> dict[str, str]:
    """``OUT/run.json`` of the last full run, or ``{}``."""
    p = Path(out) / "run.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def only_one(subs: list[Submission], student: str, out: Path) -> tuple[list[Submission], dict[str, dict]]:
    """``--student``: the one submission to grade, and the earlier run's cached results of
    everyone else (as dicts), which stay as they are. Raises ``LookupError`` with the reason."""
    todo = [s for s in subs if s.student == student]
    if not todo:
        alias = [s.student for s in subs if s.lms_user == student]
        if alias:
            raise LookupError(f"--student {student}: that is the LMS's id of {alias[0]}, the id this class is "
                              f"graded under (the roster's): use --student {alias[0]}")
        near = ", ".join(s.student for s in subs if student.lower() in (s.student + " " + s.name).lower()) or \
            ", ".join(s.student for s in subs[:10])
        raise LookupError(f"--student {student}: no such student in this class (ids: {near})")
    earlier, lacking = {}, []
    for s in subs:
        if s.student == student:
            continue
        try:
            earlier[s.student] = json.loads((Path(out) / "results" / f"{s.student}.json").read_text())
        except (OSError, ValueError):
            lacking.append(s.student)
    if lacking:
        raise LookupError(f"--student {student}: no earlier result in {out} for {', '.join(lacking[:10])}"
                          f"{' ...' if len(lacking) > 10 else ''}: grade the whole class into this --out first")
    return todo, earlier


def cached(out: Path, student: str) -> dict | None:
    try:
        return json.loads((Path(out) / "results" / f"{student}.json").read_text())
    except (OSError, ValueError):
        return None


def change_line(old, new) -> str:
    """``1003: 0/21 invalid-notebook -> 21/21 graded`` (old: a result of the earlier run, or None)."""
    def one(r):
        final = r.extra.get("final_score") if getattr(r, "extra", None) else None
        shown = f"{r.score:g}/{r.auto_max:g}" + (f" (final {final})" if final not in (None, f"{r.score:g}") else "")
        return f"{shown} {r.status}" + (f" [{','.join(r.flags)}]" if r.flags else "")
    if old is None:
        return f"{new.student}: (no earlier result) -> {one(new)}"
    same = one(old) == one(new)
    return f"{new.student}: {one(old)} -> {one(new)}" + (" (unchanged)" if same else "")
