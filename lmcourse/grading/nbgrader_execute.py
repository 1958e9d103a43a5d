"""Plain ``nbgrader autograde`` runs each kernel in the same sandbox as ``lmcourse grade``.

The course's ``autograder/nbgrader_config.py`` puts :class:`SandboxedExecute` where nbgrader's ``Execute``
stood. Instead of starting a kernel in the TA's own world (where it could read the source notebooks, rewrite
the package, classmates' submissions and the gradebook, and leave a process behind), it hands the notebook
to the runner of :mod:`.sandbox` exactly as ``lmcourse grade`` does: the same preamble first, the same
allowlisted world (the notebook's own package, the corpus, one capped folder in memory), the same limits,
every process ending with the sandbox. The judge (:class:`lmcourse.marking.grader.JudgeRecords`, next in the
list) then reads the records, after :mod:`.trusted` has checked that the package is the one the batch
started with.

Without a working bubblewrap it refuses to grade, saying how to get one, unless the TA asked for no sandbox
(``LMCOURSE_SANDBOX=none``: trusted submissions only).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from nbgrader.preprocessors import Execute
from traitlets import Integer

from . import sandbox, trusted
from .limits import Limits
from .prepare import INJECTED_TAG, strip_injected, uses_torch

__all__ = ["ForeignMetadata", "SandboxedExecute", "WRITTEN_KEY"]

WRITTEN_KEY = "lmcourse_written_code"     # resources: the scan's findings on code files the kernel left


def _cache() -> Path:
    from .. import data

    return data.data_dir() / "kernel-packages"


class SandboxedExecute(Execute):
    """nbgrader's Execute step, run in the course's sandbox (the limits are ``lmcourse grade``'s defaults;
    the per-cell limit is nbgrader's own ``Execute.timeout``)."""

    memory_mb = Integer(Limits.memory_mb, help="memory cap per submission, MB").tag(config=True)
    notebook_timeout = Integer(int(Limits.notebook_timeout), help="whole notebook, wall clock, s").tag(config=True)
    disk_mb = Integer(Limits.disk_mb, help="everything a kernel writes, MB").tag(config=True)

    def preprocess(self, nb, resources):
        from nbformat import from_dict, v4

        from . import preamble
        from .classify import classify

        info = resources.get("nbgrader", {})
        assignment = info.get("notebook") or info.get("assignment") or ""
        kind, why = sandbox.require()
        if kind == sandbox.NONE:
            self.log.warning("grading %s WITHOUT a sandbox (%s): trusted submissions only", assignment, why)
        trusted.load(assignment)            # the judge's modules, before any kernel of this batch runs
        package = None
        if kind == "bubblewrap":
            from .kernel_package import kernel_package

            # every assignment gets a package made for it: one that is none of the course's notebooks gets
            # the barest, never the whole package with its answers and hidden cases
            package = kernel_package(assignment, _cache())
        limits = Limits(cell_timeout=int(self.timeout or Limits.cell_timeout), memory_mb=self.memory_mb,
                        notebook_timeout=float(self.notebook_timeout), disk_mb=self.disk_mb)
        cell = v4.new_code_cell(preamble.source(limits.seed, limits.output_chars, uses_torch(nb), assignment))
        cell.metadata[INJECTED_TAG] = {"kind": "preamble"}
        sent = from_dict(json.loads(json.dumps(nb)))
        sent.cells = [cell, *(c for c in sent.cells if INJECTED_TAG not in c.metadata)]
        job = {"nb": sent, "cell_timeout": limits.cell_timeout, "notebook_timeout": limits.notebook_timeout,
               "output_chars": limits.output_chars, "memory_mb": limits.memory_mb, "nproc": limits.processes,
               "injected_tag": INJECTED_TAG}
        work = Path(tempfile.mkdtemp(prefix="lmcourse-nbgrader-"))
        try:
            report, killed = sandbox.run(job, work, 0, timeout=limits.notebook_timeout + 30,
                                         max_bytes=200 * 2**20, package=package, disk_mb=limits.disk_mb)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if report and report.get("written_code"):     # JudgeRecords flags them with the scan's findings
            from .scan import scan_written

            resources[WRITTEN_KEY] = scan_written(report["written_code"])
        status, detail = classify(report, killed, limits)
        if status != "graded":
            self.log.warning("%s: %s (%s)", info.get("student", "?"), status, detail)
        ran = from_dict(report["nb"]) if report and report.get("nb") else None
        if ran is None or len(ran.cells) != len(sent.cells):
            ran = _nothing_ran(sent, detail or status)
        trusted.check(assignment)           # the package the judge reads next is the one it started with
        return strip_injected(ran), resources


def _nothing_ran(nb, why: str):
    """The notebook with every code cell failed: no report came back, so no cell may look clean (nbgrader
    gives full points to a test cell without an error)."""
    from nbformat import v4

    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = [v4.new_output("error", ename="NotRun", evalue=why, traceback=[f"NotRun: {why}"])]
    return nb


from .scan import FOREIGN  # noqa: E402 (where a cell's unusable nbgrader metadata is kept, for the scan)


def _metadata_base():
    from nbconvert.preprocessors import Preprocessor

    return Preprocessor


class ForeignMetadata(_metadata_base()):
    """nbgrader's first sanitising step in the course's config: nbgrader metadata a student gave a cell of their
    own that nbgrader cannot read (no grade id, or another schema version) is moved aside into the cell's
    ``lmcourse_student_nbgrader`` key. nbgrader stops the whole class's autograde at the first such cell
    ("old version of the nbgrader metadata format"); moved aside, the cell is graded as a student's cell and the
    source scan flags it."""

    enabled = True

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader")
            if meta is None:
                continue
            if not isinstance(meta, dict) or not meta.get("grade_id") or meta.get("schema_version") != 3:
                cell.metadata[FOREIGN] = cell.metadata.pop("nbgrader")
        return nb, resources
