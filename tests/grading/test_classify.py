"""`classify`: a run's status and detail from the sandbox runner's report, table-driven (no
notebook is executed; the reports are written as the runner writes them)."""

from __future__ import annotations

import pytest

from lmcourse.grading.classify import STATUSES, classify
from lmcourse.grading.limits import Limits

LIMITS = Limits(notebook_timeout=90, cell_timeout=7, memory_mb=1234, processes=64)


def nb(*enames: str) -> dict:
    """An executed notebook (as JSON) with one code cell per error name ("" = a clean cell)."""
    return {"cells": [{"cell_type": "code", "source": "", "metadata": {},
                       "outputs": [{"output_type": "error", "ename": e, "evalue": "", "traceback": []}]
                       if e else [{"output_type": "stream", "name": "stdout", "text": "ok\n"}]}
                      for e in enames], "metadata": {}}


def report(notebook: dict | None = None, **kw) -> dict:
    """A runner report: nothing went wrong unless a keyword says so."""
    return {"nb": nb("") if notebook is None else notebook, "timed_out_cells": [], "died": None,
            "deadline": None, "process_limit": None, "stuck": None, **kw}


CASES = [   # (name, report, killed by the host, status, words the detail must hold)
    ("clean", report(), False, "graded", []),
    ("failing tests are still graded", report(nb("AssertionError", "CheckFailed")), False, "graded", []),
    ("killed at the notebook cap", report(), True, "timeout", ["90 s", "killed"]),
    ("killed with no report at all", None, True, "timeout", ["killed"]),
    ("no report", None, False, "crashed", ["no notebook"]),
    ("report without a notebook", {"died": -1, "error": "MemoryError in the runner", "nb": None}, False,
     "crashed", ["no notebook", "MemoryError in the runner"]),
    ("fork bomb", report(process_limit=61, died=3), False, "process-limit", ["61 of 64", "fork bomb"]),
    ("fork bomb outranks MemoryError", report(nb("MemoryError"), process_limit=60), False, "process-limit",
     ["60 of 64"]),
    ("MemoryError", report(nb("", "MemoryError")), False, "memory-limit", ["1234 MB"]),
    ("MemoryError outranks the deadline", report(nb("MemoryError"), deadline=2), False, "memory-limit", []),
    ("stopped at the notebook cap", report(deadline=2), False, "timeout", ["90 s", "stopped"]),
    ("deadline outranks a dead kernel", report(deadline=2, died=2), False, "timeout", ["stopped"]),
    ("kernel died", report(died=4), False, "crashed", ["kernel died"]),
    ("kernel failed to start", report(died=-1, error="Kernel didn't respond"), False, "crashed",
     ["kernel died", "Kernel didn't respond"]),
    ("a cell timed out", report(timed_out_cells=[3]), False, "timeout", ["7 s", "interrupted"]),
    ("a dead kernel outranks a cell timeout", report(died=5, timed_out_cells=[3]), False, "crashed", []),
    ("a cell timed out and the kernel stayed stuck", report(timed_out_cells=[3], stuck=3), False, "timeout",
     ["7 s", "did not stop when interrupted", "stopped", "the rest score 0"]),
    ("a dead kernel outranks a stuck one", report(died=5, timed_out_cells=[3], stuck=3), False, "crashed", []),
    ("over the memory cap, seen from the host", report(died=2, memory_limit=1300), False, "memory-limit",
     ["1300 MB", "1234 MB cap", "the rest score 0"]),
    ("the runner stopped by the notebook", report(died=2, runner_stopped=True), False, "crashed",
     ["stopped the grader's runner", "the rest score 0"]),
]


@pytest.mark.parametrize("name, rep, killed, status, words", CASES, ids=[c[0] for c in CASES])
def test_classify(name, rep, killed, status, words):
    got, detail = classify(rep, killed, LIMITS)
    assert got == status and got in STATUSES
    assert (detail == "") == (status == "graded"), detail    # every other status says why
    for w in words:
        assert w in detail, (w, detail)


def test_classify_is_pure():
    rep = report(nb("MemoryError"), timed_out_cells=[1])
    snapshot = repr(rep)
    assert classify(rep, False, LIMITS) == classify(rep, False, LIMITS)
    assert repr(rep) == snapshot
