"""The assignment as the grader needs it, generated with nbgrader's ``generate_assignment``: the
release a submission is checked against, the source with the hidden tests, the grade cells and
their points. Generated once per assignment version (what makes the release: the source, the
config, the stub class, nbgrader's version) and kept in ``--out`` and in the user's cache
(``lmcourse.data.data_dir()/templates``), so a new ``--out``, a shard or a regrade copies it
instead of starting nbgrader again (seconds each)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path

import nbformat

from ..commands.paths import repo_root
from .nbgrader_cli import run_nbgrader

# the stub class the config imports (NamedStubs): read as text, part of the release's fingerprint
STUBS = Path(__file__).resolve().parent.parent / "authoring" / "stubs.py"


class Template:
    """The assignment, generated once: course folder to copy, release, grade cells."""

    def __init__(self, assignment: str, workdir: Path, root: Path | None = None):
        root = Path(root or repo_root())
        src = root / "autograder" / "source" / assignment / f"{assignment}.ipynb"
        if not src.is_file():
            raise FileNotFoundError(f"no source notebook {src} (is the assignment name right?)")
        self.assignment = assignment
        self.source_path = src
        self.course = Path(workdir) / "template"
        # the release depends on the source, the config and the stub class it uses (NamedStubs)
        config = root / "autograder" / "nbgrader_config.py"
        self.fingerprint = hashlib.sha256(b"\0".join([src.read_bytes(), config.read_bytes(),
                                                      STUBS.read_bytes(), version("nbgrader").encode()])).hexdigest()
        released = self.course / "release" / assignment / f"{assignment}.ipynb"
        if not self._current(self.course):
            if self.course.exists():
                shutil.rmtree(self.course)
            cached = _cache() / f"{assignment}-{self.fingerprint[:24]}"
            if self._current(cached):
                shutil.copytree(cached, self.course)
            else:
                shutil.rmtree(cached, ignore_errors=True)   # a damaged copy: made again below
                (self.course / "source" / assignment).mkdir(parents=True)
                shutil.copy(config, self.course / "nbgrader_config.py")
                shutil.copy(src, self.course / "source" / assignment / f"{assignment}.ipynb")
                run_nbgrader(["generate_assignment", assignment, "--force", "--log-level=WARN"], self.course)
                (self.course / STAMP).write_text(self.fingerprint)
                _keep(self.course, cached)
        self.source = nbformat.read(src, as_version=4)
        self.release = nbformat.read(released, as_version=4)
        self.grade_cells = [(c.metadata["nbgrader"]["grade_id"], c.cell_type,
                             float(c.metadata["nbgrader"].get("points", 0)))
                            for c in self.source.cells
                            if c.metadata.get("nbgrader", {}).get("grade")]
        self.points = {gid: p for gid, _, p in self.grade_cells}
        self.max_score = sum(p for _, _, p in self.grade_cells)
        self.release_source = {c.metadata["nbgrader"]["grade_id"]: c.source for c in self.release.cells
                               if c.metadata.get("nbgrader", {}).get("grade_id")}
        self.source_by_id = {c.metadata["nbgrader"]["grade_id"]: c.source for c in self.source.cells
                             if c.metadata.get("nbgrader", {}).get("grade_id")}
        self.exercise_of = exercises(self.source)

    def is_solution_copy(self, raw: bytes) -> bool:
        """Whether ``raw`` is the course's solution notebook (``solutions/A.ipynb``) or a copy of
        it: none of nbgrader's cell metadata, and the source notebook's prose as it is."""
        try:
            cells = json.loads(raw.decode("utf-8-sig"))["cells"]
            texts = {_text(c.get("source", "")) for c in cells}
            if any((c.get("metadata") or {}).get("nbgrader") for c in cells):
                return False
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            return False
        prose = [c.source.strip() for c in self.source.cells if c.cell_type == "markdown"
                 and c.source.strip() and not c.metadata.get("nbgrader", {}).get("solution")]
        # most, not all: a TA may have edited a line of it
        return bool(prose) and sum(p in texts for p in prose) >= 0.8 * len(prose)

    def self_test_notebook(self) -> nbformat.NotebookNode:
        """The solution as a student would hand it in: the student release with every answer cell
        filled in from the source notebook (its solution markers removed)."""
        nb = copy.deepcopy(self.release)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution") and meta.get("grade_id") in self.source_by_id:
                cell.source = _SOLUTION_MARK.sub("", self.source_by_id[meta["grade_id"]]).strip("\n")
        return nb

    def _current(self, course: Path) -> bool:
        """``course`` holds this version's release (its stamp is this fingerprint)."""
        stamp = course / STAMP
        return ((course / "release" / self.assignment / f"{self.assignment}.ipynb").is_file()
                and stamp.is_file() and stamp.read_text() == self.fingerprint)

    def hidden_lines(self) -> list[str]:
        """Every non-trivial line of hidden-test source in the source notebook."""
        return hidden_test_lines(self.source)


STAMP = "source.sha256"   # the fingerprint a template folder was generated for


# nbgrader's solution markers, a whole line each
_SOLUTION_MARK = re.compile(r"^[ \t]*### (?:BEGIN|END) SOLUTION\b.*(?:\n|$)", re.M)


def _text(source) -> str:
    return ("".join(source) if isinstance(source, list) else str(source)).strip()


def _cache() -> Path:
    from ..data import data_dir

    return data_dir() / "templates"


def _keep(course: Path, cached: Path) -> None:
    """A copy of a freshly generated template in the user's cache, put in place whole (a rename),
    so a reader never sees half of one; a cache that cannot be written is no error."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{cached.name}-", dir=cached.parent))
        shutil.copytree(course, tmp, dirs_exist_ok=True)
        try:
            os.replace(tmp, cached)
        except OSError:              # another grader kept the same version first: theirs stays
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        pass


_EXERCISE = re.compile(r"^#{1,6}\s+(Exercise\s+\d+[a-z]?)\b", re.M)
# a quiz question opens with its bold number (**Q1.**, **Q2 (auto-graded).**) under "Questions"
_QUESTION = re.compile(r"^\*\*Q(\d+)\b", re.M)


def exercises(source: nbformat.NotebookNode) -> dict[str, str]:
    """grade id -> the exercise or question it belongs to (``Exercise 2``, ``Question 1``): the last
    ``### Exercise N`` heading or ``**QN.**`` question above the cell, as the notebook names them
    (:mod:`lmcourse.authoring.stubs`)."""
    found, current = {}, None
    for cell in source.cells:
        if cell.cell_type == "markdown":
            marks = sorted([(m.start(), " ".join(m.group(1).split())) for m in _EXERCISE.finditer(cell.source)]
                           + [(m.start(), f"Question {m.group(1)}") for m in _QUESTION.finditer(cell.source)])
            current = marks[-1][1] if marks else current
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid and current:
            found[gid] = current
    return found


def test_label(exercise_of: dict[str, str], gid: str) -> str:
    """How a test cell is named to a student: ``Exercise 2 tests``, ``Question 1`` (a quiz answer's
    check is the question itself), ``Tests`` when it belongs to neither."""
    name = exercise_of.get(gid)
    if name is None:
        return "Tests"
    return name if name.startswith("Question ") else f"{name} tests"


def hidden_test_lines(source: nbformat.NotebookNode) -> list[str]:
    """The non-trivial lines (12 characters or more, not comments) between nbgrader's hidden-test
    markers of a source notebook: what must never appear on a page a student sees."""
    lines, inside = [], False
    for cell in source.cells:
        for line in cell.source.splitlines():
            s = line.strip()
            if s.startswith("### BEGIN HIDDEN TESTS"):
                inside = True
            elif s.startswith("### END HIDDEN TESTS"):
                inside = False
            elif inside and len(s) >= 12 and not s.startswith("#"):
                lines.append(s)
    return lines
