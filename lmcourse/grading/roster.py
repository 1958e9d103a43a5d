"""The class list: who should have submitted, and their extensions.

A roster is a CSV file with a header row. Columns (case and spaces in names do not matter;
only ``id`` is required):

- ``id``: the student id the grader uses: for a Canvas download the Canvas user id (the ``ID``
  column of Canvas's gradebook export), else the nbgrader / folder name;
- ``name``, ``email``, ``section``;
- ``extension``: a duration added to ``--due`` (``48h``, ``2d``) or a personal due time
  (ISO 8601 with timezone), see :mod:`.late`;
- optional ``sis_id`` / ``login`` (Canvas's SIS User ID / SIS Login ID) and ``id_number``
  (Moodle's ID number), copied into the LMS import files.

Canvas's own gradebook export works as a roster as it is (``Student``, ``ID``, ``SIS User ID``,
``SIS Login ID``, ``Section``; its ``Points Possible`` row is skipped).

With a roster, every student on it gets a row: no submission gives ``missing-notebook``. A
submission whose id is not on the roster is matched by name where exactly one roster name
fits (Moodle's participant ids change with each assignment; Canvas writes ``smithjane`` for
"Jane Smith"), flag ``matched-by-name``; otherwise it is graded and flagged ``not-on-roster``.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .ingest import Submission, student_id
from .late import LateError, parse_duration, parse_time

ALIASES = {
    "id": ("id", "student_id", "user_id", "canvas_id", "username"),
    "name": ("name", "full_name", "student", "student_name"),
    "email": ("email", "email_address", "e_mail"),
    "section": ("section", "group"),
    "extension": ("extension", "extra_time"),
    "sis_id": ("sis_id", "sis_user_id"),
    "login": ("login", "sis_login_id"),
    "id_number": ("id_number", "idnumber"),
}


class RosterError(ValueError):
    """The roster cannot be read; the message names the line."""


@dataclass
class Student:
    id: str
    name: str = ""
    email: str = ""
    section: str = ""
    extension: str = ""
    sis_id: str = ""
    login: str = ""
    id_number: str = ""


def _key(header: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", header.strip().lower()).strip("_")


def read_roster(path: Path) -> dict[str, Student]:
    """id -> Student, in file order."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RosterError(f"roster {path}: {exc}") from exc
    text = _decode(data)
    rows = list(csv.reader(text.splitlines(), delimiter=_delimiter(text)))
    if not rows:
        raise RosterError(f"roster {path}: empty")
    keys = [_key(h) for h in rows[0]]
    col: dict[str, int] = {}
    for field, names in ALIASES.items():
        for n in names:
            if n in keys and keys.index(n) not in col.values():
                col[field] = keys.index(n)
                break
    if "id" not in col:
        raise RosterError(f"roster {path}: no id column (header: {', '.join(rows[0])})")
    out: dict[str, Student] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        vals = {f: (row[i].strip() if i < len(row) else "") for f, i in col.items()}
        if not vals["id"]:
            if "points possible" in " ".join(row).lower():   # Canvas export's second row
                continue
            raise RosterError(f"roster {path}, line {line}: no id")
        sid = student_id(vals["id"])
        if sid in out:
            raise RosterError(f"roster {path}, line {line}: id {vals['id']!r} appears twice")
        ext = vals.get("extension", "")
        try:
            if re.match(r"^\d{4}-\d{2}-\d{2}", ext):
                parse_time(ext, "extension")
            else:
                parse_duration(ext, "extension")
        except LateError as exc:
            raise RosterError(f"roster {path}, line {line}: {exc}") from exc
        out[sid] = Student(sid, **{f: v for f, v in vals.items() if f != "id"})
    return out


def _decode(data: bytes) -> str:
    """What spreadsheets write: UTF-8 (with or without Excel's BOM), UTF-16 with a BOM (Excel's
    "Unicode text"), else Windows-1252 (Excel's plain "CSV" on Windows)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _delimiter(text: str) -> str:
    """``,``, or ``;`` (Excel where the decimal mark is a comma) or a tab, whichever splits the
    header row into the most columns."""
    header = next((line for line in text.splitlines() if line.strip()), "")
    return max([",", ";", "\t"], key=lambda d: (len(next(csv.reader([header], delimiter=d), [])), d == ","))


def _letters(s: str) -> str:
    """A name's letters and digits in any script, lower case, accents dropped (``Zoë`` and
    ``Zoe`` and NFD's ``Zoe\u0308`` are ``zoe``); nothing is dropped whole, so ``Zoë`` never
    reads as ``Zo``."""
    flat = "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))
    return "".join(c for c in flat.casefold() if c.isalnum())


def names_match(lms_name: str, roster_name: str) -> bool:
    """"Jane Smith", "Smith, Jane" and Canvas's "smithjane" name the same person."""
    a = _letters(lms_name)
    if not a:
        return False
    words = [w for w in re.split(r"[\s,]+", roster_name.strip()) if w][:5]
    return any(_letters("".join(p)) == a for p in itertools.permutations(words))


def apply_roster(subs: list[Submission], roster: dict[str, Student]) -> tuple[list[Submission], dict[str, list[str]]]:
    """Submissions matched to the roster, one ``missing-notebook`` entry for each student on it
    without one; and the roster flags per student id (``not-on-roster``, ``matched-by-name``),
    which say nothing about the notebook and so are kept out of the submission's own flags."""
    marks: dict[str, list[str]] = {}
    taken = {s.student for s in subs if s.student in roster}
    fitting = {id(sub): [st for sid, st in roster.items() if sid not in taken and sub.name
                         and names_match(sub.name, st.name)] for sub in subs if sub.student not in roster}
    claims: dict[str, int] = {}
    for fits in fitting.values():
        for st in fits:
            claims[st.id] = claims.get(st.id, 0) + 1
    for sub in subs:
        if sub.student in roster:
            continue
        # one roster name for this submission, and no other submission under that name: two
        # LMS accounts showing one name (a student may set their display name) match neither
        fits = [st for st in fitting[id(sub)] if claims[st.id] == 1]
        if len(fitting[id(sub)]) == 1 and len(fits) == 1:
            if not sub.lms_user:
                sub.lms_user = sub.student
            sub.student = fits[0].id
            taken.add(sub.student)
            marks.setdefault(sub.student, []).append("matched-by-name")
        else:
            marks.setdefault(sub.student, []).append("not-on-roster")
    for sub in subs:
        st = roster.get(sub.student)
        if st is not None and st.name:
            sub.name = st.name
    have = {s.student for s in subs}
    for sid, st in roster.items():
        if sid not in have:
            subs.append(Submission(sid, None, detail="no submission (on the roster)", name=st.name))
    return sorted(subs, key=lambda s: s.student), marks
