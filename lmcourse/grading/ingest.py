"""Find the submissions in what a TA hands to ``lmcourse grade``.

Accepted inputs (the assignment name is ``A``):
- an LMS zip: extracted safely (no absolute paths, no ``..``, no links, size and count caps)
  into the output folder, then read as a folder;
- nbgrader's layout ``submitted/<student>/A/*.ipynb`` (the folder given, or its ``submitted/``);
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
from pathlib import Path, PurePosixPath

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
            name = info.filename.replace("\\", "/")
            parts = PurePosixPath(name).parts
            if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or ".." in parts:
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
            target = (dest / info.filename.replace("\\", "/")).resolve()
            if dest not in target.parents and target != dest:
                raise IngestError(f"{zip_path}: unsafe path in zip: {info.filename!r}")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            with zf.open(info) as src, open(target, "wb") as out:
                # the header's size can lie: count what is actually decompressed
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    if written > ZIP_MAX_MEMBER_BYTES:
                        raise IngestError(f"{zip_path}: {info.filename!r} decompresses past the cap")
                    out.write(chunk)
    return dest


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ipynb") if p.is_file() and not p.name.startswith("."))


def _pick(student: str, folder: Path, assignment: str) -> Submission:
    sid = student_id(student)
    exact = folder / f"{assignment}.ipynb"
    if exact.is_file():
        return Submission(sid, exact)
    found = _notebooks(folder)
    if not found:
        return Submission(sid, None, detail=f"no notebook in {folder.name}/")
    named = [p for p in found if assignment in p.stem] or found
    sub = Submission(sid, named[0], ["renamed"], detail=f"graded {named[0].name}")
    if len(named) > 1:
        sub.flags.append("several-notebooks")
        sub.detail += f" (of {len(named)}: {', '.join(p.name for p in named)})"
    return sub


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
                and not _notebooks(inner[0])):
            root = inner[0]
            continue
        break
    subs: list[Submission] = []
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "__")))
    if any((d / assignment).is_dir() for d in dirs):          # nbgrader layout
        subs = [_pick(d.name, d / assignment, assignment) if (d / assignment).is_dir()
                else Submission(student_id(d.name), None, detail=f"no {assignment}/ folder")
                for d in dirs]
    elif dirs and any(_notebooks(d) for d in dirs):           # one folder per student
        subs = [_pick(d.name, d, assignment) for d in dirs]
    # flat notebooks beside (or instead of) student folders: file name = student id
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
