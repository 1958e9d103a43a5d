"""Results into an nbgrader gradebook, so that formgrader and ``nbgrader export`` work as usual."""

from __future__ import annotations

import functools
import json
import shutil
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import SaveAutoGrades, SaveCells

from .nbgrader_cli import new_gradebook

if TYPE_CHECKING:
    from .result import Result
    from .template import Template


def _quiet_nbgrader_session_warnings(fn):
    """nbgrader 0.9.6's ``Gradebook.add_submission`` builds a ``SubmittedAssignment`` with its
    student and assignment set before adding it to the session; under SQLAlchemy 2 the autoflush
    that follows warns "Object of type <SubmittedAssignment> not in session, add operation along
    'Assignment.submissions' will not proceed". nbgrader adds the object itself right after, so
    no row is lost (tests/grading/test_grade.py::test_results_land_in_the_gradebook reads them back): the
    warning is noise in a TA's output and in the tests', so it is ignored here, and only here."""

    @functools.wraps(fn)
    def quiet(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
            return fn(*args, **kwargs)
    return quiet


class _FlushingSession:
    """An open session, with nbgrader's per-cell commits turned into flushes."""

    def __init__(self, session):
        self._session = session

    def commit(self):
        self._session.flush()

    def __getattr__(self, name):
        return getattr(self._session, name)


class _OpenGradebook:
    """An open :class:`Gradebook` whose ``db`` is a :class:`_FlushingSession`."""

    def __init__(self, gb: Gradebook):
        self._gb, self.db = gb, _FlushingSession(gb.db)

    def __getattr__(self, name):
        return getattr(self._gb, name)


class BatchedSaveAutoGrades(SaveAutoGrades):
    """nbgrader's SaveAutoGrades (same rules, same rows) on one open gradebook ``gb``, committed
    once per student (by the caller) instead of once per cell."""

    def __init__(self, gb: Gradebook, **kw):
        super().__init__(**kw)
        self._open = _OpenGradebook(gb)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        self.notebook_id, self.assignment_id = info["notebook"], info["assignment"]
        self.student_id, self.db_url = info["student"], info["db_url"]
        self.gradebook = self._open
        return super(SaveAutoGrades, self).preprocess(nb, resources)


@_quiet_nbgrader_session_warnings
def write_gradebook(results: list[Result], tpl: Template, out: Path, db: Path) -> int:
    """Results into the nbgrader gradebook ``db`` (created if missing): the assignment and its
    cells (nbgrader's ``SaveCells`` on the source notebook), one submission per student with a
    notebook that ran, auto scores by nbgrader's ``SaveAutoGrades`` then the grader's verdict
    (tampered tests 0). The autograded notebooks go to ``<db folder>/autograded/<student>/A/``,
    where formgrader looks for them. Hand-graded scores of earlier runs are not kept for a
    regraded student (nbgrader's own ``autograde --force`` does the same). Returns the count."""
    asg = tpl.assignment
    db = Path(db).resolve()
    db.parent.mkdir(parents=True, exist_ok=True)
    new_gradebook(db)
    url = f"sqlite:///{db}"
    with Gradebook(url) as gb:
        gb.update_or_create_assignment(asg)
    info = {"db_url": url, "assignment": asg, "notebook": asg}
    SaveCells().preprocess(nbformat.from_dict(json.loads(json.dumps(tpl.source))), {"nbgrader": info})

    written = 0
    with Gradebook(url) as gb:
        for r in results:
            graded = out / "autograded" / f"{r.student}.ipynb"
            if not graded.is_file():
                continue
            nb = nbformat.read(graded, as_version=4)
            gb.update_or_create_student(r.student)
            try:
                gb.remove_submission(asg, r.student)
            except MissingEntry:
                pass
            gb.add_submission(asg, r.student)
            BatchedSaveAutoGrades(gb).preprocess(nb, {"nbgrader": {**info, "student": r.student}})
            for gid, pts in r.tests.items():
                if pts is None:
                    continue
                g = gb.find_grade(gid, asg, asg, r.student)
                if g.auto_score != pts:
                    g.auto_score = pts
            gb.db.commit()
            dest = db.parent / "autograded" / r.student / asg / f"{asg}.ipynb"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(graded, dest)
            written += 1
    return written
