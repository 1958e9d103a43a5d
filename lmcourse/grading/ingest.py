"""Find the submissions in what a TA hands to ``lmcourse grade``.

Accepted inputs (the assignment name is ``A``):
- an LMS zip: extracted safely (no absolute paths, no ``..``, no links, size and count caps)
  into the output folder, then read as a folder;
- a Canvas or Moodle bulk download (zip or extracted): the student id is the LMS's user id
  (Canvas) or participant id (Moodle), the display name and Canvas's ``LATE`` marker are kept
  (:mod:`.lms` describes the formats and which carry a submission time);
- nbgrader's layout ``submitted/<student>/A/*.ipynb`` (the folder given, or its ``submitted/``),
  with the submission time from nbgrader's ``timestamp.txt`` where there is one;
- one folder per student, ``<student>/*.ipynb``;
- a flat folder of notebooks, ``<student>.ipynb`` (the file name is the student id).

In a student's folder the notebook ``A.ipynb`` is taken; otherwise one other notebook is
accepted and flagged ``renamed`` (``01_ngram (1).ipynb``); none gives ``missing-notebook``.
Nothing here modifies the input.
"""

from __future__ import annotations

import re
import stat
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from . import lms

# Caps for LMS zips (a class of notebooks is a few MB; these stop zip bombs).
ZIP_MAX_MEMBERS = 5000
ZIP_MAX_MEMBER_BYTES = 64 * 2**20
ZIP_MAX_TOTAL_BYTES = 1024 * 2**20


class IngestError(Exception):
    """The input as a whole cannot be read (not one submission: the batch)."""


@dataclass
class Submission:
    student: str
    path: Path | None          # None: no notebook found (status missing-notebook)
    flags: list[str] = field(default_factory=list)
    detail: str = ""
    name: str = ""                  # display name (from the LMS, or the roster)
    source: str = "folder"          # "canvas", "moodle", "nbgrader" or "folder"
    lms_user: str = ""              # Canvas user id / Moodle participant id
    lms_submission: str = ""        # Canvas submission id
    late_marker: bool = False       # Canvas's LATE marker
    submitted_at: datetime | None = None   # aware; only where the format carries a time


def student_id(name: str) -> str:
    """A file-system and nbgrader safe id: letters, digits, ``_.-``; other runs become ``_``."""
    sid = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "student"
    return sid[:100]


def safe_extract(zip_path: Path, dest: Path) -> Path:
    """Extract ``zip_path`` into ``dest`` refusing traversal, links and oversized content."""
    dest = Path(dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise IngestError(f"{zip_path}: not a readable zip file ({exc})") from exc
    with zf:
        members = zf.infolist()
        if len(members) > ZIP_MAX_MEMBERS:
            raise IngestError(f"{zip_path}: {len(members)} entries (cap {ZIP_MAX_MEMBERS})")
        total = 0
        for info in members:
            info.filename = name = _utf8_name(info)
            parts = PurePosixPath(name).parts
            if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
                raise IngestError(f"{zip_path}: unsafe path in zip: {info.filename!r}")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise IngestError(f"{zip_path}: zip contains a symbolic link: {info.filename!r}")
            if info.file_size > ZIP_MAX_MEMBER_BYTES:
                raise IngestError(f"{zip_path}: {info.filename!r} is {info.file_size} bytes "
                                  f"(cap {ZIP_MAX_MEMBER_BYTES})")
            total += info.file_size
            if total > ZIP_MAX_TOTAL_BYTES:
                raise IngestError(f"{zip_path}: more than {ZIP_MAX_TOTAL_BYTES} bytes uncompressed")
        for info in members:
            target = (dest / _member_path(info.filename)).resolve()
            if dest not in target.parents and target != dest:
                raise IngestError(f"{zip_path}: unsafe path in zip: {info.filename!r}")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            written = 0
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    # the header's size can lie: count what is actually decompressed
                    while chunk := src.read(1 << 20):
                        written += len(chunk)
                        if written > ZIP_MAX_MEMBER_BYTES:
                            raise IngestError(f"{zip_path}: {info.filename!r} decompresses past the cap")
                        out.write(chunk)
            except OSError as exc:
                raise IngestError(f"{zip_path}: cannot extract {info.filename!r} ({exc})") from exc
    return dest


def _utf8_name(info: zipfile.ZipInfo) -> str:
    """The entry's name. A zip without the UTF-8 flag (Info-ZIP, Windows' and macOS's own zips,
    some LMS exports) still mostly holds UTF-8 bytes, which Python reads as cp437 (``José``
    becomes ``Jos├⌐``, and the roster then no longer knows the student): read them as UTF-8
    where they are valid UTF-8, as unzip does."""
    if info.flag_bits & 0x800:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return info.filename


NAME_BYTES = 200   # longest file name written on extraction (most file systems allow 255 bytes)


def _member_path(name: str) -> str:
    """Where a zip entry goes, relative to the folder it is extracted into. ``/`` separates
    folders (the zip format's separator; an entry with ``..`` or an absolute path is refused
    before this). A backslash is a separator too (zips written on Windows) unless that would
    make a ``..`` (or a drive), or the entry is one LMS file at the top (Canvas's flat names):
    then it is part of a file name, since Canvas and Moodle keep a student's own file name as it
    was uploaded (``a\\..\\x.ipynb`` from a Mac or Linux machine), one student's odd name must not
    stop the whole class, and ``a\\smithjane_1001_5_01_ngram.ipynb`` must stay the uploader's.
    A name too long for the file system is shortened in its middle (the LMS's prefix, which says
    whose file it is, and the extension stay)."""
    out = []
    parts = name.split("/")
    for part in parts:
        pieces = part.split("\\")
        flat = len(parts) == 1 and (lms.parse_canvas(part) or lms.parse_moodle(part))   # one LMS file
        if (flat or part.startswith("\\")
                or any(p in ("..", ".") or re.match(r"^[A-Za-z]:$", p) for p in pieces)):
            pieces = [part.replace("\\", "_")]
        out += [_short(p) for p in pieces if p]
    return "/".join(out)


def _short(part: str) -> str:
    raw = part.encode("utf-8")
    if len(raw) <= NAME_BYTES:
        return part
    import hashlib

    stem, dot, ext = part.rpartition(".")
    if not dot or len(ext) > 16:
        stem, ext = part, ""
    keep = stem.encode("utf-8")[:NAME_BYTES - 30].decode("utf-8", "ignore")
    return f"{keep}~{hashlib.sha256(raw).hexdigest()[:10]}" + (f".{ext}" if ext else "")


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ipynb") if p.is_file() and not p.name.startswith("."))


def _choose(sid: str, found: list[tuple[str, Path]], assignment: str, where: str,
            canvas: bool = False) -> Submission:
    """The notebook to grade among a student's ``(file name, path)`` pairs: ``A.ipynb`` if
    there (for Canvas also ``A-1.ipynb``, ``A-2.ipynb``, ...: its renaming of a file uploaded
    again; the highest number is the newest and is graded, flag ``several-notebooks`` and
    ``detail`` naming them all where more than one came in),
    else the one other notebook (flag ``renamed``)."""
    want = f"{assignment}.ipynb"
    exact = [(n, p) for n, p in found if n == want]
    if canvas:      # A.ipynb, A-1.ipynb, A-2.ipynb: the same file uploaded again, the highest the newest
        exact = sorted(((n, p) for n, p in found if n == want or lms.canvas_unsuffixed(n) == want),
                       key=lambda np: (lms.canvas_copy(np[0]), np[0]))
    if exact:
        name, path = exact[-1]
        sub = Submission(sid, path)
        if len(exact) > 1:
            sub.flags.append("several-notebooks")
            sub.detail = (f"graded {name}, the newest of {len(exact)} uploads of {want} "
                          f"({', '.join(n for n, _ in exact)})")
        elif name != want:
            sub.detail = f"graded {name} (the LMS's name for a resubmitted {want})"
        return sub
    if not found:
        return Submission(sid, None, detail=f"no notebook in {where}")
    named = [(n, p) for n, p in found if assignment in n] or found
    sub = Submission(sid, named[0][1], ["renamed"], detail=f"graded {named[0][0]}")
    if len(named) > 1:
        sub.flags.append("several-notebooks")
        sub.detail += f" (of {len(named)}: {', '.join(n for n, _ in named)})"
    return sub


def _pick(student: str, folder: Path, assignment: str) -> Submission:
    return _choose(student_id(student), [(p.name, p) for p in _notebooks(folder)], assignment,
                   f"{folder.name}/")


def _from_lms(fmt: str, groups: dict[str, lms.LmsGroup], unknown: list[Path],
              assignment: str) -> list[Submission]:
    subs = []
    for user, g in groups.items():
        sub = _choose(student_id(user), g.files, assignment, f"the {fmt} download for {g.entry.name}",
                      canvas=fmt == "canvas")
        if sub.path is None and g.other:
            sub.detail = f"no notebook; submitted {', '.join(sorted(g.other))}"
        sub.name, sub.source, sub.lms_user = g.entry.name, fmt, user
        sub.lms_submission, sub.late_marker = g.entry.submission, g.entry.late
        subs.append(sub)
    for p in unknown:   # a notebook whose name no LMS pattern explains: graded under its name
        subs.append(Submission(student_id(p.stem), p, ["unknown-lms-name"],
                               detail=f"{p.name}: not a {fmt} file name", source=fmt))
    return subs


def find_submissions(src: Path, assignment: str, unpack_dir: Path) -> list[Submission]:
    """The submissions in ``src`` (folder or zip), one per student, sorted by student id."""
    src = Path(src)
    if src.is_file() and zipfile.is_zipfile(src):
        src = safe_extract(src, unpack_dir)
    if not src.is_dir():
        raise IngestError(f"{src}: not a folder or a zip file")
    root = src / "submitted" if (src / "submitted").is_dir() else src
    while True:  # an LMS export often wraps everything in one folder: step into it
        inner = [d for d in root.iterdir() if not d.name.startswith((".", "__"))]
        if (len(inner) == 1 and inner[0].is_dir() and not (inner[0] / assignment).is_dir()
                and not _notebooks(inner[0]) and not lms.parse_moodle(inner[0].name)):
            root = inner[0]
            continue
        break
    subs: list[Submission] = []
    fmt, groups, unknown = lms.scan(root)
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "__")))
    if fmt:                                                   # Canvas / Moodle download
        subs = _from_lms(fmt, groups, unknown, assignment)
    elif any((d / assignment).is_dir() for d in dirs):        # nbgrader layout
        subs = [_pick(d.name, d / assignment, assignment) if (d / assignment).is_dir()
                else Submission(student_id(d.name), None, detail=f"no {assignment}/ folder")
                for d in dirs]
        for sub, d in zip(subs, dirs):
            sub.source = "nbgrader"
            sub.submitted_at = lms.read_timestamp(d / assignment / "timestamp.txt")
    elif dirs and any(_notebooks(d) for d in dirs):           # one folder per student
        subs = [_pick(d.name, d, assignment) for d in dirs]
    if not fmt:   # flat notebooks beside (or instead of) student folders: file name = student id
        subs += [Submission(student_id(p.stem), p) for p in _notebooks(root)]
    seen: dict[str, int] = {}
    for sub in subs:                                          # ids must be unique
        n = seen.get(sub.student, 0)
        seen[sub.student] = n + 1
        if n:
            sub.student = f"{sub.student}_{n + 1}"
            sub.flags.append("duplicate-id")
    if not subs:
        raise IngestError(f"{src}: no submissions found for {assignment}")
    return sorted(subs, key=lambda s: s.student)
