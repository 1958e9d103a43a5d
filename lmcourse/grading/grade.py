"""``lmcourse grade``: autograde a whole class, one sandboxed kernel per student.

The pipeline, one named step per module (as nbgrader splits its converters):

- :mod:`.ingest`: the submissions found in a folder, an nbgrader ``submitted/`` tree or an LMS zip;
- :mod:`.semester`: the roster and the due time applied around the run (late columns after it),
  and ``--student`` (one submission rerun, the others' results kept);
- :mod:`.template`: the assignment, generated once per version (:class:`Template`; kept in OUT
  and the user's cache);
- :mod:`.prepare`: each submission checked and repaired against the release (a named status for
  unusable files; flags for renamed files, edited/deleted tests, edited metadata), with the
  :mod:`.preamble` injected;
- :mod:`.sandbox` (host) and :mod:`.sandbox_runner` (inside): the notebook, hidden tests back in
  its test cells as ``nbgrader autograde`` runs them, executed with nbclient under the
  :class:`Limits` of :mod:`.limits`; the notebook-wide cap kills the whole sandbox;
- :mod:`.classify`: the run's status from the runner's report;
- here: the records judged in this process (:mod:`lmcourse.marking.grader`), every test cell
  scored with nbgrader's own rule (``nbgrader.utils.determine_grade``), the autograded copy;
- :mod:`.feedback`: nbgrader's feedback page, rendered in-process with the hidden tests removed
  and then verified absent;
- :mod:`.reports` (``grades.csv``, the summary, ``--timings``) and :mod:`.gradebook` (the
  results in an nbgrader gradebook with the autograded notebooks beside it, so formgrader and
  ``nbgrader export`` work as usual).

Each submission goes through two stages: :func:`_run_stage` in one of ``jobs`` workers (cache
lookup, checks, the sandbox run) and :func:`_finish_stage` in one finisher thread (so a worker's
slot takes the next submission as soon as its sandbox exits). One submission's failure never
stops the batch. Results are cached per submission under ``OUT/results/`` keyed by the
submission's bytes, the assignment source and the limits, so a rerun skips finished work unless
``force``. The original submissions are only read.

``OUT`` is a TA-only folder: ``OUT/template/`` (nbgrader's release and its gradebook) and
``OUT/autograded/`` hold hidden-test source. Only ``OUT/feedback/*.html`` is for students; the
pages are self-contained (no links into ``OUT``).

Why one module: it is the pipeline's map (the order of the stages, the result
cache, the worker pool and the finisher thread); each step it calls lives in a module of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

from . import sandbox, trusted
from .classify import STATUSES, classify
from .feedback import write_feedback, write_status_page
from .ingest import Submission, find_submissions
from .limits import Limits
from .prepare import INJECTED_TAG, repair_submission, strip_injected
from .reports import phase_times, summary, timing_table, write_csv
from .result import WRONG_ASSIGNMENT_HINT, Result
from .scan import FLAG as SCAN_FLAG
from .scan import scan_cells, scan_written
from .semester import ClassSetup, annotate, arrange, assess_all, cached, change_line, only_one, write_record
from .shard import take_share
from .template import Template

__all__ = ["GRADER_VERSION", "STATUSES", "Limits", "Result", "Template", "grade", "grade_one", "self_test",
           "solution_copy_detail", "summary", "timing_table", "write_csv"]



def _grading_code() -> str:
    """A fingerprint of the code that decides a grade and writes its messages (the grader, the
    judge and the tests of every notebook, the check helpers): part of the result cache's key, so a
    change to any of them regrades, with no version to bump by hand."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = sorted([*root.joinpath("grading").glob("*.py"), *root.joinpath("marking").glob("*.py"),
                    *root.joinpath("reference").glob("*.py"),
                    root / "checks.py"])
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()[:12]


GRADER_VERSION = _grading_code()
MAX_NOTEBOOK_BYTES = 50 * 2**20


# ---------------------------------------------------------------- one submission, in two stages

@dataclass
class _Pending:
    """A submission between its two stages: :func:`_run_stage` (in a worker: cache lookup,
    checks, the sandbox run) and :func:`_finish_stage` (in the one finisher thread: status,
    scores, autograded copy, feedback page, cache write)."""
    res: Result
    start: float
    report: dict | None = None
    killed: bool = False
    done: bool = True              # nothing left to finish (cached, unusable file, grader error)


GRADER_ERRORS = "grader-errors.log"   # in --out: the traceback of each grader error, for a bug report
_ERRORS_LOCK = threading.Lock()


def _grader_error(res: Result, out: Path, exc: Exception) -> None:
    """The grader itself failed on this submission (not the student's code): it is marked crashed, left
    out of the cache, and the traceback, which a 300-character detail cannot hold, goes to GRADER_ERRORS."""
    res.status = "crashed"
    res.detail = f"grader error (traceback in {GRADER_ERRORS}): {type(exc).__name__}: {exc}"[:300]
    res.key = ""        # not the submission's fault: a rerun grades it again instead of reading this back
    with _ERRORS_LOCK, open(out / GRADER_ERRORS, "a", encoding="utf-8") as log:
        log.write(f"--- {res.student} ({res.assignment})\n{traceback.format_exc()}\n")


def _run_stage(sub: Submission, tpl: Template, limits: Limits, out: Path, force: bool = False,
               keep_work: bool = False, slots: queue.Queue | None = None) -> _Pending:
    start = time.perf_counter()
    asg = tpl.assignment
    res = Result(sub.student, asg, "missing-notebook", max_score=tpl.max_score,
                 auto_max=sum(p for _, kind, p in tpl.grade_cells if kind == "code"), flags=list(sub.flags),
                 detail=sub.detail, tests={gid: 0.0 if kind == "code" else None
                                           for gid, kind, _ in tpl.grade_cells})
    raw, too_big = b"", False
    if sub.path is not None:
        too_big = sub.path.stat().st_size > MAX_NOTEBOOK_BYTES
        raw = b"" if too_big else sub.path.read_bytes()
    key = hashlib.sha256(b"\0".join([raw, tpl.fingerprint.encode(), GRADER_VERSION.encode(),
                                     json.dumps(asdict(limits), sort_keys=True).encode(),
                                     json.dumps(sub.flags).encode(), str(too_big).encode()])).hexdigest()
    cache = out / "results" / f"{sub.student}.json"
    if not force and cache.is_file():
        try:
            old = Result(**json.loads(cache.read_text()))
            if old.key == key:
                old.timings = {}          # nothing was run for it now
                old.cached = True         # the table says so
                return _Pending(old, start, done=True)
        except (ValueError, TypeError):
            pass
    res.key = key
    pending = _Pending(res, start, done=False)
    (out / "autograded" / f"{sub.student}.ipynb").unlink(missing_ok=True)
    if sub.path is None:
        return pending
    if too_big:
        res.status, res.detail = "invalid-notebook", f"larger than {MAX_NOTEBOOK_BYTES} bytes"
        return pending
    slot = slots.get() if slots is not None else 0
    try:
        pending.report, pending.killed = _prepare_and_run(raw, tpl, limits, out, res, keep_work, slot)
    except Exception as exc:  # noqa: BLE001 (one submission never stops the batch)
        _grader_error(res, out, exc)
        pending.report, pending.killed = None, False
    finally:
        if slots is not None:
            slots.put(slot)
    return pending


def solution_copy_detail(assignment: str) -> str:
    """What a wrong-assignment result says when the notebook is the course's solution notebook:
    the right notebook, without the metadata the grader finds the answers by."""
    return (f"this is the course's solution notebook (solutions/{assignment}.ipynb) or a copy of it, which has "
            f"none of nbgrader's cell metadata, so the grader cannot find its answers; hand in the student "
            f"notebook ({assignment}.ipynb of the release) with the answers written in it. To check the grader "
            f"on a perfect submission: lmcourse grade {assignment} --self-test")


def self_test(assignment: str, out: Path, limits: Limits | None = None) -> tuple[Result, list[str]]:
    """Grade the solution as a student would hand it in (:meth:`Template.self_test_notebook`:
    the release with the answers filled in) into ``out``, afresh; its result and the test cells
    that lost points."""
    out = Path(out).resolve()
    tpl = Template(assignment, out)
    subs = out / "submission"
    shutil.rmtree(subs, ignore_errors=True)
    subs.mkdir(parents=True)
    nbformat.write(tpl.self_test_notebook(), subs / "solution.ipynb")
    (res,) = grade(subs, assignment, out, jobs=1, limits=limits, force=True, progress=False)
    return res, [gid for gid, score in res.tests.items() if score is not None and score < tpl.points.get(gid, 0)]


def _prepare_and_run(raw: bytes, tpl: Template, limits: Limits, out: Path, res: Result,
                     keep_work: bool, slot: int) -> tuple[dict | None, bool]:
    """Check and repair the notebook (:func:`.prepare.repair_submission`), run it in the sandbox in a
    fresh work folder; status ``running`` when there is a run to finish, else the final status
    (invalid file, wrong assignment). Returns the runner's report and whether it was killed."""
    t = time.perf_counter()
    prep = repair_submission(raw, tpl.release, seed=limits.seed, output_cap=limits.output_chars,
                             assignment=tpl.assignment)
    res.timings["prepare"] = round(time.perf_counter() - t, 3)
    res.flags += prep.flags
    res.detail = "; ".join(x for x in [res.detail, prep.detail] if x)
    found = scan_cells(prep.nb, skip_tag=INJECTED_TAG, given=tpl.release) if prep.nb is not None else []
    if found:       # for a person to look at: no score changes for it
        res.flags.append(SCAN_FLAG)
        res.detail = "; ".join(x for x in [res.detail, f"{SCAN_FLAG}: " + ", ".join(found)] if x)
    if prep.status != "graded":
        res.status = prep.status
        if prep.status == "wrong-assignment":   # the student gets a page that says why it scored 0
            res.detail = (solution_copy_detail(tpl.assignment) if tpl.is_solution_copy(raw)
                          else f"{res.detail} — {WRONG_ASSIGNMENT_HINT}")
            write_status_page(tpl, out, res)
        return None, False
    res.status = "running"
    (out / "work").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{res.student}-", dir=out / "work"))
    job = {"nb": _notebook_for_kernel(prep.nb, tpl), "cell_timeout": limits.cell_timeout,
           "notebook_timeout": limits.notebook_timeout, "output_chars": limits.output_chars,
           "memory_mb": limits.memory_mb, "nproc": limits.processes, "injected_tag": INJECTED_TAG}
    try:
        report, killed = sandbox.run(job, work, slot, timeout=limits.notebook_timeout + 30,
                                     max_bytes=MAX_NOTEBOOK_BYTES * 4, package=_package(tpl.assignment),
                                     disk_mb=limits.disk_mb)
    finally:
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)
    if report:
        res.timings.update(phase_times(report.get("stamps", {})))
    return report, killed


def _package(assignment: str) -> Path | None:
    """The package a kernel grading ``assignment`` sees under bubblewrap (:mod:`.kernel_package`): made once
    per version in the grader's cache, which no sandbox binds."""
    if sandbox.mode()[0] != "bubblewrap":
        return None
    from .. import data
    from .kernel_package import kernel_package

    return kernel_package(assignment, data.data_dir() / "kernel-packages")


def _notebook_for_kernel(prep_nb, tpl: Template):
    """The notebook the kernel executes: test cells as in the source (hidden tests included),
    what nbgrader's autograde runs."""
    nb = nbformat.from_dict(json.loads(json.dumps(prep_nb)))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            cell.source = tpl.source_by_id.get(meta["grade_id"], cell.source)
    return nb


def _finish_stage(p: _Pending, tpl: Template, limits: Limits, out: Path) -> Result:
    res = p.res
    if p.done:
        return res
    try:
        if res.status == "running":
            _finish_run(p.report, p.killed, tpl, limits, out, res)
    except Exception as exc:  # noqa: BLE001 (one submission never stops the batch)
        _grader_error(res, out, exc)
    res.seconds = round(time.perf_counter() - p.start, 2)
    cache = out / "results" / f"{res.student}.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({**asdict(res), "cached": False}, indent=1))
    return res


def grade_one(sub: Submission, tpl: Template, limits: Limits, out: Path, force: bool = False,
              keep_work: bool = False, slots: queue.Queue | None = None) -> Result:
    """One submission, both stages in this thread."""
    return _finish_stage(_run_stage(sub, tpl, limits, out, force, keep_work, slots), tpl, limits, out)


def _finish_run(report: dict | None, killed: bool, tpl: Template, limits: Limits, out: Path,
                res: Result) -> None:
    """Status (:func:`.classify.classify`) and scores from the runner's report;
    the autograded copy and the feedback page."""
    t = time.perf_counter()
    status, detail = classify(report, killed, limits)
    res.status = status
    if status != "graded":      # what went wrong first; the scan's findings stay beside it, for the flag's reader
        scanned = [part for part in (res.detail or "").split("; ") if part.startswith(f"{SCAN_FLAG}: ")]
        res.detail = "; ".join([detail, *scanned])
    # modules the notebook wrote (and may have imported): code its cells do not show
    _flag_findings(res, scan_written(report.get("written_code") or {}) if report else [])
    nb = nbformat.from_dict(report["nb"]) if report and report.get("nb") else None
    if nb is None:
        return
    _score(nb, tpl, res)
    res.timings["scoring"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    _write_autograded(nb, tpl, out / "autograded" / f"{res.student}.ipynb")
    res.timings["autograded write"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    write_feedback(nb, tpl, out, res)
    res.timings["feedback render"] = round(time.perf_counter() - t, 3)


def _flag_findings(res: Result, found: list[str]) -> None:
    """Findings for a person beside the scan's: the flag, and what was found in the detail; no score changes."""
    if not found:
        return
    if SCAN_FLAG not in res.flags:
        res.flags.append(SCAN_FLAG)
    res.detail = "; ".join(x for x in [res.detail, f"{SCAN_FLAG}: " + ", ".join(found)] if x)


def _score(nb, tpl: Template, res: Result) -> None:
    """The records judged (:func:`lmcourse.marking.grader.judge_notebook`), then every grade cell
    scored by nbgrader's own rule (``determine_grade``)."""
    from nbgrader.utils import determine_grade, is_grade

    from ..marking.grader import judge_notebook, unreadable_findings

    trusted.check(tpl.assignment)         # judged with the package the batch started with
    outcomes = judge_notebook(nb, tpl.assignment)     # records judged here, in the grader's process
    # answers that scored from code no cell shows (an item of a value a hidden text filled): flagged, not zeroed
    _flag_findings(res, unreadable_findings(nb, tpl.assignment, outcomes))
    for cell in nb.cells:
        if INJECTED_TAG not in cell.metadata and is_grade(cell):
            gid = cell.metadata["nbgrader"]["grade_id"]
            if gid in res.tests:
                pts = determine_grade(cell)[0]
                res.tests[gid] = pts if pts is None else float(pts)
    res.score = float(sum(v for v in res.tests.values() if v is not None))


def _write_autograded(nb, tpl: Template, dest: Path) -> None:
    """The executed notebook for the TA (it holds the hidden tests), the injected cells removed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(strip_injected(nbformat.from_dict(json.loads(json.dumps(nb)))), dest)


# ---------------------------------------------------------------- the batch

def _ensure_corpus() -> None:
    """Notebooks read the course corpus, and a sandboxed kernel has no network to fetch it:
    get it now, once, so the sandbox can mount it read-only for every submission."""
    from .. import data

    try:
        data.ensure_shakespeare()
    except data.CorpusUnavailable as exc:
        print(f"lmcourse grade: warning: {exc}\nSubmissions whose notebook reads the corpus will fail "
              "in the corpus cell.", file=sys.stderr)


def grade(src: Path, assignment: str, out: Path, jobs: int | None = None, limits: Limits | None = None,
          force: bool = False, progress: bool = True, keep_work: bool = False,
          gradebook: Path | None = None, timings: dict[str, float] | None = None,
          setup: ClassSetup | None = None, student: str | None = None,
          notes: list[str] | None = None, shard: tuple[int, int] | None = None) -> list[Result]:
    """Grade every submission in ``src``; ``timings`` (if given) receives the batch phases.
    ``setup``: roster, due time, late policy (:mod:`.semester`); ``student``: regrade that one
    submission only (``notes`` receives what changed), the others' earlier results stay;
    ``shard`` ``(K, N)``: only the K-th of N shares of the class (:mod:`.shard`)."""
    timings = {} if timings is None else timings
    notes = [] if notes is None else notes
    setup = ClassSetup() if setup is None else setup
    limits = Limits() if limits is None else limits
    sandbox.require()   # no quiet fallback: without bubblewrap the TA must say --sandbox none
    t = time.perf_counter()
    sandbox.compile_course()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    subs, marks = arrange(find_submissions(Path(src), assignment, out / "input"), setup)
    if shard is not None:   # after the roster: a student without a submission is in one share too
        subs = take_share(subs, shard, out)
    lateness = assess_all(subs, setup)
    todo, earlier = (subs, {}) if student is None else only_one(subs, student, out)
    force = force or student is not None
    before = [Result(**d) for d in filter(None, [cached(out, student)])] if student else []
    timings["find submissions"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    _ensure_corpus()
    timings["corpus (downloaded once, then cached)"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    tpl = Template(assignment, out)
    timings["template (generate_assignment; copied when cached)"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    trusted.load(assignment)    # the judge's modules, imported before any kernel of the batch runs
    _package(assignment)
    timings["judge and kernel package (made once, then cached)"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    jobs = max(1, jobs or os.cpu_count() or 1)
    slots: queue.Queue = queue.Queue()
    for i in range(jobs):
        slots.put(i)
    results: dict[str, Result] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"grading {assignment}", unit="nb", file=sys.stderr)
    # `jobs` workers keep `jobs` sandboxes busy; one finisher thread scores, writes the
    # autograded copy and renders feedback for each run as it comes back, so a worker's slot
    # is free again as soon as its sandbox exits
    with ThreadPoolExecutor(max_workers=jobs) as pool, ThreadPoolExecutor(max_workers=1) as finisher:
        running = [pool.submit(_run_stage, s, tpl, limits, out, force, keep_work, slots) for s in todo]
        finishing = []
        for fut in as_completed(running):
            finishing.append(finisher.submit(_finish_stage, fut.result(), tpl, limits, out))
            if bar is not None:
                finishing[-1].add_done_callback(lambda _: bar.update(1))
        for fut in finishing:
            r = fut.result()
            results[r.student] = r
    if bar is not None:
        bar.close()
    results.update({sid: Result(**d) for sid, d in earlier.items()})
    ordered = [results[s.student] for s in subs]
    notes += annotate(ordered + before, subs, marks, lateness)
    notes += [change_line(before[0] if before else None, results[student])] if student else []
    if (out / "work").is_dir() and not any((out / "work").iterdir()):
        (out / "work").rmdir()
    timings["grading (wall, all workers)"] = round(time.perf_counter() - t, 3)
    notes += write_csv(ordered, tpl, out / "grades.csv")
    write_record(out, assignment, subs, setup, gradebook)
    if gradebook is not None:
        t = time.perf_counter()
        from .gradebook import write_gradebook  # imports nbgrader's preprocessors: only here

        write_gradebook([r for r in ordered if r.student not in earlier], tpl, out, Path(gradebook))
        timings["gradebook write"] = round(time.perf_counter() - t, 3)
    return ordered
