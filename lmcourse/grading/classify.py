"""A run's status from the sandbox runner's report: a pure function, no notebook executed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .limits import Limits

STATUSES = ("graded", "timeout", "crashed", "memory-limit", "process-limit", "invalid-notebook",
            "missing-notebook", "wrong-assignment")


def _error_names(nb: dict | None) -> list[str]:
    return [o.get("ename", "") for c in (nb or {}).get("cells", []) if c.get("cell_type") == "code"
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def classify(report: dict | None, killed: bool, limits: Limits) -> tuple[str, str]:
    """(status, detail) of a run: ``report`` is the runner's (None when it sent none), ``killed``
    whether the host killed the sandbox at the notebook cap. The first that applies wins: killed,
    no notebook back, process table full, MemoryError, notebook cap, kernel died, a cell timed
    out and the kernel stayed stuck, a cell timed out; else ``graded``."""
    nb = report.get("nb") if report else None
    if killed:
        return "timeout", f"the notebook ran past {limits.notebook_timeout:g} s and was killed (no grade)"
    if not nb:
        return "crashed", "the sandbox returned no notebook" + (f": {report.get('error')}" if report else "")
    if report.get("process_limit") is not None:
        return "process-limit", (f"the notebook filled its process table ({report['process_limit']} of "
                                 f"{limits.processes} processes and threads: a fork bomb?); everything in "
                                 "the sandbox was killed, tests before it were graded, the rest score 0")
    if report.get("memory_limit") is not None:
        return "memory-limit", (f"the sandbox's processes held {report['memory_limit']} MB together, over the "
                                f"{limits.memory_mb} MB cap; everything in it was killed, tests before it were graded, "
                                "the rest score 0")
    if report.get("runner_stopped"):
        return "crashed", ("the notebook stopped the grader's runner (a signal sent to the process that runs it); "
                           "everything in the sandbox was killed, tests before it were graded, the rest score 0")
    if any("MemoryError" in e for e in _error_names(nb)):
        return "memory-limit", f"over {limits.memory_mb} MB (MemoryError); the rest was graded"
    if report.get("deadline") is not None:
        return "timeout", (f"the notebook ran past {limits.notebook_timeout:g} s and was stopped; "
                           "cells not run score 0")
    if report.get("died") is not None:
        return "crashed", ("the kernel died (os._exit, a signal or a crash); tests before it were graded, "
                           "the rest score 0" + (f"; {report['error']}" if report.get("error") else ""))
    if report.get("stuck") is not None:
        return "timeout", (f"a cell ran past {limits.cell_timeout} s and the kernel did not stop when interrupted "
                           "(a loop that ignores SIGINT, or a kernel the notebook broke): it was stopped there; "
                           "tests before it were graded, the rest score 0")
    if report.get("timed_out_cells"):
        return "timeout", f"a cell ran past {limits.cell_timeout} s (interrupted; the rest was graded)"
    return "graded", ""

