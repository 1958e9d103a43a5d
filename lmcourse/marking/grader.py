"""The grader's side: a run notebook's records read back, judged, and written as the test cells' outputs.

:func:`judge_notebook` runs in the grader's process after the notebook has run (``lmcourse
grade`` before it scores; plain ``nbgrader autograde`` through :class:`JudgeRecords`, which the
course's ``nbgrader_config.py`` puts right after execution). For each test cell of a notebook
graded from records it takes the one record its ``tests.grade(...)`` line wrote, compares every
case with the reference's value (computed here, once per process), and replaces the cell's
outputs: an error output with the message when it failed (nbgrader then scores the cell 0), a
line saying how many checks passed when it passed. Expected values never exist in the kernel.

A graded test cell ends in the error its ``tests.grade`` line raises after the record
(:class:`~lmcourse.marking.kernel.AwaitingJudge`), so a cell that no judge reads scores 0 under any
nbgrader; the judge takes exactly that error, after a record, for the cell having run to its end.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from .judge import Outcome, expected_values, judge_exercise
from .kernel import MIME, AwaitingJudge, hidden_cases
from .notebooks import load, marked
from .plain import decode

RECORD_SECONDS = 30.0   # what reading one test's record may take in the judge (an honest one: well under a second)
NOTEBOOK_SECONDS = 90.0  # what reading all of one notebook's records may take: a batch's one finisher
                         # thread must not spend a record's allowance per test cell on one submission

__all__ = ["JudgeRecords", "RecordsStayPut", "judge_notebook", "unreadable_findings"]  # noqa: F822 (RecordsStayPut: built on first use)


@functools.cache
def _expected(notebook: str, exercise: str) -> tuple[tuple, list[Any]]:
    spec = load(notebook)
    ex = spec.exercise(exercise)
    cases = ex.cases + hidden_cases(spec, exercise)
    return cases, expected_values(spec.reference, cases)


def _records(cell) -> list[dict]:
    return [o["data"][MIME] for o in cell.get("outputs", [])
            if o.get("output_type") in ("display_data", "execute_result") and MIME in o.get("data", {})]


def _errors_but_awaiting(outputs: list) -> list:
    """The cell's error outputs, but the one a graded test raises on purpose after its record
    (:class:`~lmcourse.marking.kernel.AwaitingJudge`): the cell's last output, after a record. Any other
    error, or that one anywhere else, is the cell's failure."""
    errors = [o for o in outputs if o.get("output_type") == "error"]
    last = outputs[-1] if outputs else None
    if errors == [last] and last.get("ename") == AwaitingJudge.__name__ and _records(
            {"outputs": outputs[:-1]}):
        return []
    return errors


def judge_cell(notebook: str, exercise: str, cell, deadline: float | None = None) -> Outcome:
    """The outcome of one test cell from the records in its outputs; reading them stops at ``deadline``
    (``time.monotonic()``) if that comes before the record's own allowance."""
    spec = load(notebook)
    ex = spec.exercise(exercise)
    records = _records(cell)
    crashed = next((o for o in _errors_but_awaiting(cell.get("outputs", []))), None)
    if crashed is not None:
        return Outcome(exercise, False, 0, None,
                       f"the test cell raised {crashed.get('ename')}: {crashed.get('evalue')}")
    if not records:
        return Outcome(exercise, False, 0, None, "the test cell wrote no record for the grader: did it run to its "
                                                 "end? (a cell of yours may have replaced `tests`)")
    if len(records) > 1:
        return Outcome(exercise, False, 0, None, f"the test cell holds {len(records)} records where the test writes "
                                                 "one: something else wrote records into it")
    record = records[0]
    if not isinstance(record, dict) or record.get("notebook") != notebook or record.get("exercise") != exercise:
        return Outcome(exercise, False, 0, None, "the record in the test cell is not this exercise's")
    cases, want = _expected(notebook, exercise)
    trees = record.get("cases", [])
    if not isinstance(trees, list) or len(trees) > len(cases):     # fewer: the judge says where it stopped
        return Outcome(exercise, False, 0, None, f"the record holds {len(trees) if isinstance(trees, list) else 'no'} "
                                                 f"cases where the test runs {len(cases)}: it is not the test's record")
    deadline = min(time.monotonic() + RECORD_SECONDS, deadline if deadline is not None else float("inf"))
    try:
        got = [decode(t, deadline) for t in trees]
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        return Outcome(exercise, False, 0, None, f"the record is damaged and cannot be read ({exc})")
    return judge_exercise(ex, cases, got, want, len(ex.cases), graded=True)


def _error_output(outcome: Outcome) -> dict:
    import nbformat

    # every page reads "ename: evalue" (feedback, results.json, the autograded notebook): one text
    return nbformat.v4.new_output("error", ename="CheckFailed", evalue=outcome.text(),
                                  traceback=[f"CheckFailed: {outcome.text()}"])


def judge_notebook(nb, notebook: str) -> dict[str, Outcome]:
    """Judge every test cell of ``notebook`` graded from records, in place; returns the outcomes
    by the test cell's grade id (empty for a notebook not graded this way)."""
    import nbformat

    if not marked(notebook):
        return {}
    from lmcourse.grading.how import refused_answers

    by_test = {ex.test_id: ex.name for ex in load(notebook).exercises}
    rank = {gid: k for k, gid in enumerate(by_test)}
    # "how", read from the answers' text here: code in the kernel can switch the kernel's rules off, not this
    refused = refused_answers(nb, notebook)
    outcomes: dict[str, Outcome] = {}
    latest = -1
    deadline = time.monotonic() + NOTEBOOK_SECONDS
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.get("cell_type") != "code" or gid not in by_test:
            continue
        if rank[gid] <= latest:
            # a test cell moved below a later exercise's test (or run twice) records after that test
            # brought the reference stand-ins of the earlier exercises into the kernel
            outcome = Outcome(by_test[gid], False, 0, None, "this test cell was moved below a later exercise's "
                                                             "test (or repeated): put the cells back in order")
        else:
            outcome = judge_cell(notebook, by_test[gid], cell, deadline)
            if outcome.passed and by_test[gid] in refused:
                outcome = Outcome(by_test[gid], False, 0, None, refused[by_test[gid]])
        latest = max(latest, rank[gid])
        outcomes[gid] = outcome
        kept = [o for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
        cell.outputs = kept + [nbformat.v4.new_output("stream", name="stdout", text=outcome.text() + "\n")
                               if outcome.passed else _error_output(outcome)]
    return outcomes


def unreadable_findings(nb, notebook: str, outcomes: dict[str, Outcome]) -> list[str]:
    """The scan-style findings (``label: what``) for answers that scored from code the judge cannot read
    (:func:`lmcourse.grading.unreadable.unreadable_answers`): flags for a person beside the scan's, the score unchanged.
    ``outcomes``: :func:`judge_notebook`'s; an answer that lost its points needs no flag."""
    if not marked(notebook):
        return []
    from lmcourse.grading.unreadable import UNREADABLE, unreadable_answers

    tests = {ex.name: ex.test_id for ex in load(notebook).exercises}
    return [f"{UNREADABLE}: {exercise} ({why})" for exercise, why in unreadable_answers(nb, notebook).items()
            if getattr(outcomes.get(tests[exercise]), "passed", False)]


def _preprocessor_base():
    from nbconvert.preprocessors import Preprocessor

    return Preprocessor


class JudgeRecords(_preprocessor_base()):
    """nbgrader preprocessor: :func:`judge_notebook` on the notebook nbgrader has just executed,
    so plain ``nbgrader autograde`` with the course's config grades as ``lmcourse grade`` does; and
    the source scan's findings (:mod:`lmcourse.grading.scan`) as ``lmcourse grade`` flags them: a
    warning in nbgrader's log and the submission flagged in the gradebook (formgrader shows the flag),
    the score unchanged."""

    enabled = True      # nbconvert's preprocessors do nothing unless enabled (nbgrader's own set it too)

    def preprocess(self, nb, resources):
        nbgrader = resources.get("nbgrader", {})
        outcomes = judge_notebook(nb, nbgrader.get("notebook", ""))
        _flag_scan_findings(nb, nbgrader, self.log, self._release(nbgrader),
                            resources.get("lmcourse_written_code") or [],
                            unreadable_findings(nb, nbgrader.get("notebook", ""), outcomes))
        return nb, resources

    def _release(self, nbgrader: dict):
        """The student notebook as the course released it (its unchanged cells are the course's, not the
        student's, for the scan), from the course directory nbgrader runs in; None where there is none."""
        import nbformat
        from nbgrader.coursedir import CourseDirectory

        course = CourseDirectory(config=self.config)
        path = Path(course.root) / course.release_directory / nbgrader.get("assignment", "") / \
            f"{nbgrader.get('notebook', '')}.ipynb"
        try:
            return nbformat.read(path, as_version=4)
        except (OSError, ValueError):
            return None


def _flag_scan_findings(nb, nbgrader: dict, log, release=None, written: list[str] = (),
                        judged: list[str] = ()) -> None:
    """``written``: the findings on code files the kernel left (the course's Execute step lists them);
    ``judged``: the judge's (:func:`unreadable_findings`)."""
    from lmcourse.grading.scan import FLAG, scan_cells

    found = scan_cells(nb, given=release) + list(written) + list(judged)
    if not found:
        return
    who = f"{nbgrader.get('student', '?')}/{nbgrader.get('assignment', '?')}"
    log.warning("%s: %s: %s (the score stands; read the autograded notebook)", who, FLAG, ", ".join(found))
    if not nbgrader.get("db_url"):
        return
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(nbgrader["db_url"]) as gb:
        try:
            sub = gb.find_submission_notebook(nbgrader["notebook"], nbgrader["assignment"], nbgrader["student"])
        except (MissingEntry, KeyError):
            log.warning("%s: no gradebook entry to flag", who)
            return
        sub.flagged = True
        gb.db.commit()


@functools.cache
def _records_stay_put():
    from nbgrader.preprocessors import Execute

    from lmcourse.grading.sandbox_runner import record_display_update

    class RecordsStayPut(Execute):
        """nbgrader's Execute, except that a display update (a display id shown again or updated,
        which nbclient applies to every earlier output with that id, in any cell) never writes or
        overwrites a test's record: a record is what its own test cell wrote while it ran, not
        what a later cell computed (say, from the stand-ins a later test brings). The course's
        ``nbgrader_config.py`` runs it in place of Execute; ``lmcourse grade``'s runner does the same."""

        def _update_display_id(self, display_id, msg):
            if not record_display_update(self.nb, self._display_id_map.get(display_id, {}), msg):
                super()._update_display_id(display_id, msg)

    return RecordsStayPut


def __getattr__(name: str):
    # built on first use: importing this module needs no nbgrader (a student's install has none)
    if name == "RecordsStayPut":
        return _records_stay_put()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
