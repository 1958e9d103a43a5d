"""A temporary nbgrader course: generate, submit, autograde, read scores.

Used by the grading proofs (tests) and by anything that must run the real nbgrader on a
copy of the course rather than on the committed files.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..commands.paths import repo_root
from ..grading.nbgrader_cli import run_nbgrader
from .build import MARKER_RE


@dataclass
class Score:
    student: str
    score: float
    max_score: float
    auto_max: float  # points that autograding can award (max_score minus hand-graded answers)
    failed_tests: list[str]
    flagged: bool = False   # formgrader's flag (the course's config sets it for the source scan's findings)


class TempCourse:
    """An nbgrader course root in ``path`` holding copies of the source notebooks."""

    def __init__(self, path: Path, names: list[str], root: Path | None = None):
        self.path, self.names, root = Path(path), names, Path(root or repo_root())
        self.path.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / "autograder" / "nbgrader_config.py", self.path / "nbgrader_config.py")
        for name in names:
            dest = self.path / "source" / name
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / "autograder" / "source" / name / f"{name}.ipynb", dest / f"{name}.ipynb")
            run_nbgrader(["generate_assignment", name, "--force", "--log-level=WARN"], self.path)

    def release(self, name: str) -> nbformat.NotebookNode:
        return nbformat.read(self.path / "release" / name / f"{name}.ipynb", as_version=4)

    def submit(self, student: str, name: str, nb: nbformat.NotebookNode | bytes | str) -> Path:
        dest = self.path / "submitted" / student / name / f"{name}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(nb, (bytes, str)):
            dest.write_bytes(nb.encode() if isinstance(nb, str) else nb)
        else:
            nbformat.write(nb, dest)
        return dest

    def autograde(self, name: str, timeout: float = 900) -> None:
        from ..grading import sandbox

        # the course's config runs every kernel in the sandbox and refuses without one; a machine without
        # bubblewrap grades these throw-away courses without it, as `lmcourse grade --sandbox none` does
        env = {"LMCOURSE_SANDBOX": "none"} if sandbox.mode()[0] == "unavailable" else None
        run_nbgrader(["autograde", name, "--force", "--log-level=WARN"], self.path, timeout=timeout, extra_env=env)

    def score(self, name: str, student: str) -> Score:
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{self.path / 'gradebook.db'}") as gb:
            sub = gb.find_submission_notebook(name, name, student)
            failed = [g.name for g in sub.grades if g.auto_score is not None and g.auto_score < g.max_score]
            manual = sum(g.max_score for g in sub.grades if g.cell_type == "markdown")
            return Score(student, sub.score, sub.max_score, sub.max_score - manual, failed, bool(sub.flagged))


def perfect_submission(release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The release notebook with every answer cell filled in as the solution does it —
    what a student who gets everything right submits (metadata and test cells untouched)."""
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    out = nbformat.from_dict(release)
    for cell in out.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            src = solutions[meta["grade_id"]]
            cell.source = "\n".join(line for line in src.split("\n") if not MARKER_RE.match(line))
    return out
