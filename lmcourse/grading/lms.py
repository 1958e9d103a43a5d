"""Who submitted what, and when: the file names of LMS bulk downloads.

A TA downloads a whole class's submissions from the LMS as one zip. The student's identity
is in the file (or folder) names, and so, sometimes, is the time:

=================  ==============================================  ============================
format             one entry per file                              submission time
=================  ==============================================  ============================
Canvas             ``<name>[_LATE]_<user id>_<submission id>_      only the ``LATE`` marker
                   <file>``, flat, e.g.                            (late or not; by how much
                   ``smithjane_LATE_12345_678901_01_ngram.ipynb``  is not in the zip)
Moodle             ``<Full Name>_<participant id>_                 none in the names
                   assignsubmission_file_/<file>`` (one folder
                   per student; older versions: the same prefix
                   on each file, flat; 4.1+: no trailing ``_``)
nbgrader           ``submitted/<student>/<A>/<A>.ipynb`` and       ``timestamp.txt`` beside the
                   ``timestamp.txt``                               notebook (nbgrader's collect
                                                                   writes it, with a timezone)
plain folder       ``<student>/<file>`` or ``<student>.ipynb``     none
=================  ==============================================  ============================

Ids. Canvas's user id is the same in every assignment of the course (and is the ``ID`` column
of Canvas's gradebook export), so it is the student id here; the display name (Canvas writes
it lower case without spaces, ``smithjane``) is kept only to show. Moodle's number is the
assignment's *participant id*: stable for that assignment (the feedback zip goes back to it)
but drawn anew for each assignment, so it is not a semester-wide id; a roster
(:mod:`.roster`) maps it to one by name (flag ``matched-by-name``). Canvas renames a file a
student uploads again under the same name (``01_ngram-1.ipynb``, ``01_ngram-2.ipynb``): that
suffix is Canvas's, so it is not counted as the student renaming the notebook. Neither zip
carries a time a late policy can measure: the zip's own entry times are the server's packing
times in no stated timezone, and are not used. For Canvas the ``LATE`` marker says only that
Canvas saw the upload after its due date (per-student overrides in Canvas included).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

# The name is Canvas's (the student's sortable name, lower case, punctuation dropped: it may be
# empty, or keep an ``_``); the first ``_<digits>_<digits>_`` after it is taken, so the student's
# own file name, which comes last, can never change whose file it is.
CANVAS = re.compile(r"^(?P<name>[^/]*?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<sub>\d+)_(?P<file>[^/]+)$")
MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<user>\d+)_assign(?:submission|feedback)_(?P<plugin>[a-z]+)_?"
                    r"(?P<file>[^/]*)$")
CANVAS_RESUBMIT = re.compile(r"-\d+(?=\.)")


@dataclass
class LmsEntry:
    """What an LMS file name says about its file."""
    lms: str            # "canvas" or "moodle"
    user: str           # Canvas user id / Moodle participant id
    name: str           # the display name as written in the file name
    filename: str       # the student's file name, LMS prefix removed (Canvas -N suffix kept)
    submission: str = ""    # Canvas submission id
    late: bool = False      # Canvas's LATE marker
    plugin: str = ""        # Moodle: "file", "onlinetext", ...


def parse_canvas(filename: str) -> LmsEntry | None:
    m = CANVAS.match(filename)
    if not m:
        return None
    return LmsEntry("canvas", m["user"], m["name"], m["file"], submission=m["sub"], late=bool(m["late"]))


def parse_moodle(part: str) -> LmsEntry | None:
    """One path component: a student's folder (``Full Name_42_assignsubmission_file_``) or,
    in the older flat layout, a file carrying the same prefix."""
    m = MOODLE.match(part)
    if not m:
        return None
    return LmsEntry("moodle", m["user"], m["name"].strip(), m["file"], plugin=m["plugin"])


def canvas_unsuffixed(filename: str) -> str:
    """``01_ngram-1.ipynb`` -> ``01_ngram.ipynb`` (Canvas's renaming of a resubmitted file)."""
    return CANVAS_RESUBMIT.sub("", filename, count=1)


def canvas_copy(filename: str) -> int:
    """The N of Canvas's ``-N`` renaming (0 for a name without it)."""
    m = CANVAS_RESUBMIT.search(filename)
    return int(m[0][1:]) if m else 0


def read_timestamp(path: Path) -> datetime | None:
    """nbgrader's ``timestamp.txt`` (``2026-03-01 23:58:12.000000 UTC``: a timezone name, an
    abbreviation dateutil knows, or an offset ``+0100``) as an aware UTC time; no timezone in
    it counts as UTC, as nbgrader reads it. None if missing or unreadable."""
    import warnings

    from dateutil import parser, tz

    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")        # dateutil warns about an abbreviation it drops
            t = parser.parse(text)
        if t.tzinfo is None:
            parts = text.split()
            zone = tz.gettz(parts[-1]) if len(parts) == 3 else None
            t = t.replace(tzinfo=zone or timezone.utc)
    except (ValueError, OverflowError):
        return None
    return t.astimezone(timezone.utc)


@dataclass
class LmsGroup:
    """One student's files in an LMS download."""
    entry: LmsEntry
    files: list[tuple[str, Path]]     # (the student's file name, where it lies)
    other: list[str]                  # files that are not notebooks (named in the detail)


def scan(root: Path) -> tuple[str, dict[str, LmsGroup], list[Path]]:
    """Group the files under ``root`` by LMS student: (format, user id -> group, files whose
    names no LMS pattern explains). Format ``""``: nothing in ``root`` looks like an LMS
    download (the caller reads it as a plain folder or nbgrader's layout)."""
    groups: dict[str, LmsGroup] = {}
    unknown: list[Path] = []
    top = sorted(p for p in root.iterdir() if not p.name.startswith((".", "__")))
    moodle = [p for p in top if parse_moodle(p.name)]
    canvas = [p for p in top if p.is_file() and parse_canvas(p.name)]
    if not moodle and not canvas:
        return "", {}, []
    fmt = "moodle" if len(moodle) >= len(canvas) else "canvas"
    for p in top:
        e = parse_moodle(p.name) if fmt == "moodle" else (parse_canvas(p.name) if p.is_file() else None)
        if e is None:
            if p.is_file() and p.suffix == ".ipynb":
                unknown.append(p)
            continue
        g = groups.setdefault(e.user, LmsGroup(e, [], []))
        g.entry.late = g.entry.late or e.late
        if e.submission and not g.entry.submission:
            g.entry.submission = e.submission
        if fmt == "moodle" and p.is_dir():
            if e.plugin != "file":          # online text and the like: no notebook in them
                continue
            found = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("."))
            items = [(str(f.relative_to(p)), f) for f in found]
        else:
            items = [(e.filename, p)]
        for name, path in items:
            if name.endswith(".ipynb"):
                g.files.append((name, path))
            else:
                g.other.append(name)
    return fmt, groups, unknown
