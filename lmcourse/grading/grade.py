"""``lmcourse grade``: autograde a whole class, one sandboxed kernel per student.

For each submission (see :mod:`.ingest` for the accepted inputs) the grader
1. checks and repairs it against the release (:mod:`.prepare`): a named status for unusable
   files, flags for renamed files, edited/deleted tests and edited metadata;
2. puts the hidden tests back into the test cells (as ``nbgrader autograde`` does) and pipes the
   notebook into a runner inside the sandbox (:mod:`.sandbox`: bubblewrap, or with an
   explicit ``--sandbox none`` none at all), which executes it with nbclient under limits (:class:`Limits`) and hands
   the executed notebook back; the notebook-wide cap kills the whole sandbox;
3. outside the sandbox, in one finisher thread (so a worker's slot takes the next submission as
   soon as its sandbox exits): scores every test cell with nbgrader's own rule
   (``nbgrader.utils.determine_grade``), reads the guard markers (``helpers-tampered`` zeroes
   the affected tests), renders nbgrader's feedback page in-process with hidden-test source
   removed and then verified absent, and at the end of the batch writes the results into an
   nbgrader gradebook (assignment, cells, submissions, auto scores) plus the autograded
   notebooks beside it, so formgrader and ``nbgrader export`` work as usual.

``--timings`` prints where the time went (per-submission phases: sandbox and Python start,
runner imports, kernel start, preamble, notebook cells, ...; batch phases: template, grading,
gradebook). One submission's failure never stops the batch. Results are cached per submission under
``OUT/results/`` keyed by the submission's bytes, the assignment source and the limits, so a
rerun skips finished work unless ``force``. The original submissions are only read.

``OUT`` is a TA-only folder: ``OUT/template/`` (nbgrader's release and its gradebook) and
``OUT/autograded/`` hold hidden-test source. Only ``OUT/feedback/*.html`` is for students; the
pages are self-contained (no links into ``OUT``).
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from . import sandbox
from .build import repo_root
from .guard import instrument
from .ingest import Submission, find_submissions
from .nbgrader_cli import run_nbgrader
from .prepare import GUARD_TAG, prepare, read_guards, strip_injected

GRADER_VERSION = "3"
STATUSES = ("graded", "timeout", "crashed", "memory-limit", "process-limit", "invalid-notebook",
            "missing-notebook", "wrong-assignment")
MAX_NOTEBOOK_BYTES = 50 * 2**20


@dataclass(frozen=True)
class Limits:
    """Per-submission limits (defaults are generous for a healthy notebook in the tiny profile,
    which autogrades in seconds)."""
    notebook_timeout: float = 600.0   # whole notebook, wall clock (s): the process tree is killed
    cell_timeout: int = 120           # one cell (s): nbgrader interrupts it and goes on
    memory_mb: int = 4096             # address space of the runner and the kernel (RLIMIT_AS)
    output_chars: int = 1_000_000     # output the student's code may produce, in total (characters)
    processes: int = 256              # processes and threads in the sandbox (RLIMIT_NPROC)
    seed: int = 0                     # random, numpy and torch seeds set before student code


@dataclass
class Result:
    student: str
    assignment: str
    status: str
    score: float = 0.0
    max_score: float = 0.0
    auto_max: float = 0.0            # of max_score, what autograding can award (rest: by hand)
    flags: list[str] = field(default_factory=list)
    detail: str = ""
    tests: dict[str, float | None] = field(default_factory=dict)
    feedback: str = ""
    seconds: float = 0.0
    key: str = ""
    timings: dict[str, float] = field(default_factory=dict)   # phase -> seconds (``--timings``)


def sandbox_description() -> str:
    return sandbox.describe()


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
        self.fingerprint = hashlib.sha256(src.read_bytes()).hexdigest()
        released = self.course / "release" / assignment / f"{assignment}.ipynb"
        stamp = self.course / "source.sha256"
        if not (released.is_file() and stamp.is_file() and stamp.read_text() == self.fingerprint):
            # built once per assignment version, reused by later runs into the same --out
            if self.course.exists():
                shutil.rmtree(self.course)
            (self.course / "source" / assignment).mkdir(parents=True)
            shutil.copy(root / "autograder" / "nbgrader_config.py", self.course / "nbgrader_config.py")
            shutil.copy(src, self.course / "source" / assignment / f"{assignment}.ipynb")
            run_nbgrader(["generate_assignment", assignment, "--force", "--log-level=WARN"], self.course)
            stamp.write_text(self.fingerprint)
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

    def hidden_lines(self) -> list[str]:
        """Every non-trivial line of hidden-test source in the source notebook."""
        lines, inside = [], False
        for cell in self.source.cells:
            for line in cell.source.splitlines():
                s = line.strip()
                if s.startswith("### BEGIN HIDDEN TESTS"):
                    inside = True
                elif s.startswith("### END HIDDEN TESTS"):
                    inside = False
                elif inside and len(s) >= 12 and not s.startswith("#"):
                    lines.append(s)
        return lines


# ---------------------------------------------------------------- running one submission

def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL the sandbox and every process below it (bwrap's pid namespace dies with it)."""
    victims = _descendants(proc.pid) if Path("/proc").is_dir() else []
    for target in [proc.pid, *victims]:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _execute(nb, work: Path, slot: int, limits: Limits) -> tuple[dict | None, bool]:
    """Run the notebook in the sandbox; (runner report or None, killed by the notebook cap)."""
    argv, env, cwd = sandbox.command(work, slot)
    job = json.dumps({"nb": nb, "cell_timeout": limits.cell_timeout,
                      "notebook_timeout": limits.notebook_timeout, "output_chars": limits.output_chars,
                      "memory_mb": limits.memory_mb, "nproc": limits.processes,
                      "guard_tag": GUARD_TAG}).encode()
    with tempfile.TemporaryFile() as result:
        t_popen = time.time()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=result,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.stdin.write(job)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        try:   # the runner stops itself at the cap; this is the backstop
            proc.wait(timeout=limits.notebook_timeout + 30)
            killed = False
        except subprocess.TimeoutExpired:
            killed = True
        t_exit = time.time()
        _kill_tree(proc)          # whatever the student left running dies now
        t_killed = time.time()
        result.seek(0)
        data = result.read(MAX_NOTEBOOK_BYTES * 4)
    if killed or not data:
        return None, killed
    try:
        report = json.loads(data)
    except ValueError:
        return None, False
    report.setdefault("stamps", {}).update(popen=t_popen, exited=t_exit, killed=t_killed, parsed=time.time())
    return report, False


# runner stamps -> phases (``--timings``): each phase ends at its stamp, starts at the one before
_PHASES = (("sandbox+python start", "start"), ("runner imports", "imports"), ("kernel start", "kernel"),
           ("preamble cell", "preamble"), ("notebook cells", "cells"), ("kernel shutdown", "shutdown"),
           ("runner: result out, exit", "exited"), ("process-tree kill", "killed"),
           ("result parse", "parsed"))


def _phase_times(stamps: dict[str, float]) -> dict[str, float]:
    out, last = {}, stamps.get("popen")
    for name, key in _PHASES:
        if key in stamps and last is not None:
            out[name] = round(stamps[key] - last, 3)
            last = stamps[key]
    return out


def _run_notebook(prep_nb, tpl: Template):
    """The notebook the kernel executes: test cells as in the source (hidden tests included),
    what nbgrader's autograde runs, each call in them reported to the guard first
    (:func:`.guard.instrument`)."""
    nb = nbformat.from_dict(json.loads(json.dumps(prep_nb)))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            cell.source = instrument(tpl.source_by_id.get(meta["grade_id"], cell.source), meta["grade_id"])
    return nb


def _scores(nb, tpl: Template) -> dict[str, float | None]:
    """nbgrader's own rule (``determine_grade``) on every grade cell."""
    from nbgrader.utils import determine_grade, is_grade

    out = {}
    for cell in nb.cells:
        if GUARD_TAG not in cell.metadata and is_grade(cell):
            out[cell.metadata["nbgrader"]["grade_id"]] = determine_grade(cell)[0]
    return out


def _feedback_notebook(nb, tpl: Template) -> None:
    """In place: no injected cells, test cells shown as released (hidden tests removed), test
    tracebacks reduced to their last line (a traceback quotes the failing hidden line)."""
    strip_injected(nb)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            cell.source = tpl.release_source.get(meta["grade_id"], "")
            for o in cell.get("outputs", []):
                if o.get("output_type") == "error":
                    o["traceback"] = [f"{o.get('ename', 'Error')}: {o.get('evalue', '')}"]


def _leaks(text: str, hidden: list[str]) -> list[str]:
    plain = html.unescape(text)
    return [line for line in hidden if line in plain]


_local = threading.local()
_IMG_NO_ALT = re.compile(r"<img(?![^>]*\balt=)", re.IGNORECASE)


def _feedback_exporter_class():
    from nbconvert.exporters import HTMLExporter, TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class FeedbackExporter(HTMLExporter):
        """nbconvert's HTMLExporter minus its BeautifulSoup pass over the finished page (which
        only adds ``alt`` to images and ``tabindex`` to cells, and was most of the render time);
        ``alt`` is added here by a regular expression."""

        def from_notebook_node(self, nb, resources=None, **kw):
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            self.register_filter("highlight_code", self.filters.get(
                "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
            resources = self._init_resources(resources)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            text, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return _IMG_NO_ALT.sub('<img alt="No description has been provided for this image"',
                                   text), resources

    return FeedbackExporter


def _exporter():
    """nbgrader's feedback page (its template), rendered in-process; one exporter per thread."""
    if getattr(_local, "exporter", None) is None:
        import nbgrader
        from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
        from traitlets.config import Config

        base = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
        c = Config()
        c.HTMLExporter.template_name = "feedback"
        c.HTMLExporter.extra_template_basedirs = [str(base / "templates")]
        c.HTMLExporter.extra_template_paths = [str(base / "static" / "node_modules" / "bootstrap" /
                                                   "dist" / "css")]
        exp = _feedback_exporter_class()(config=c)
        exp.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
        _local.exporter = exp
    return _local.exporter


def _write_feedback(nb, tpl: Template, sid: str, out: Path, res: Result) -> None:
    fb = nbformat.from_dict(json.loads(json.dumps(nb)))
    _feedback_notebook(fb, tpl)
    for cell in fb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["score"] = res.tests.get(meta["grade_id"])
            meta["points"] = tpl.points.get(meta["grade_id"], 0.0)
        if meta.get("solution") or meta.get("task"):
            meta["comment"] = None
    resources = {"nbgrader": {"notebook": tpl.assignment, "assignment": tpl.assignment,
                              "student": sid, "score": res.score, "max_score": res.max_score,
                              "late_penalty": 0}}
    text, _ = _exporter().from_notebook_node(fb, resources=resources)
    if _leaks(text, tpl.hidden_lines()):
        res.flags.append("feedback-withheld")   # never hand out hidden tests
        return
    dest = out / "feedback" / f"{sid}.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    res.feedback = str(dest.relative_to(out))


@dataclass
class _Pending:
    """A submission between its two stages: the sandbox run (a worker) and the finishing
    (scoring, autograded copy, feedback page, cache: one finisher thread in the parent)."""
    res: Result
    start: float
    report: dict | None = None
    killed: bool = False
    done: bool = True              # nothing left to finish (cached, unusable file, grader error)


def _sandbox_stage(sub: Submission, tpl: Template, limits: Limits, out: Path, force: bool = False,
                   keep_work: bool = False, slots: queue.Queue | None = None) -> _Pending:
    start = time.perf_counter()
    asg = tpl.assignment
    res = Result(sub.student, asg, "missing-notebook", max_score=tpl.max_score,
                 auto_max=sum(p for _, kind, p in tpl.grade_cells if kind == "code"), flags=list(sub.flags),
                 detail=sub.detail, tests={gid: 0.0 if kind == "code" else None
                                           for gid, kind, _ in tpl.grade_cells})
    raw = b""
    if sub.path is not None:
        raw = sub.path.read_bytes() if sub.path.stat().st_size <= MAX_NOTEBOOK_BYTES else b"\0"
    key = hashlib.sha256(b"\0".join([raw, tpl.fingerprint.encode(), GRADER_VERSION.encode(),
                                     json.dumps(asdict(limits), sort_keys=True).encode(),
                                     json.dumps(sub.flags).encode()])).hexdigest()
    cache = out / "results" / f"{sub.student}.json"
    if not force and cache.is_file():
        try:
            old = Result(**json.loads(cache.read_text()))
            if old.key == key:
                old.timings = {}          # nothing was run for it now
                return _Pending(old, start, done=True)
        except (ValueError, TypeError):
            pass
    res.key = key
    pending = _Pending(res, start, done=False)
    (out / "autograded" / f"{sub.student}.ipynb").unlink(missing_ok=True)
    if sub.path is None:
        return pending
    slot = slots.get() if slots is not None else 0
    try:
        pending.report, pending.killed = _run_sandboxed(sub, raw, tpl, limits, out, res, keep_work, slot)
    except Exception as exc:  # noqa: BLE001 (one submission never stops the batch)
        res.status, res.detail = "crashed", f"grader error: {type(exc).__name__}: {exc}"[:300]
        pending.report, pending.killed = None, False
    finally:
        if slots is not None:
            slots.put(slot)
    return pending


def _finish_stage(p: _Pending, tpl: Template, limits: Limits, out: Path) -> Result:
    res = p.res
    if p.done:
        return res
    try:
        if res.status == "running":
            _conclude(p.report, p.killed, tpl, limits, out, res)
    except Exception as exc:  # noqa: BLE001 (one submission never stops the batch)
        res.status, res.detail = "crashed", f"grader error: {type(exc).__name__}: {exc}"[:300]
    res.seconds = round(time.perf_counter() - p.start, 2)
    cache = out / "results" / f"{res.student}.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(asdict(res), indent=1))
    return res


def grade_one(sub: Submission, tpl: Template, limits: Limits, out: Path, force: bool = False,
              keep_work: bool = False, slots: queue.Queue | None = None) -> Result:
    """One submission, both stages in this thread."""
    return _finish_stage(_sandbox_stage(sub, tpl, limits, out, force, keep_work, slots), tpl, limits, out)


def _run_sandboxed(sub: Submission, raw: bytes, tpl: Template, limits: Limits, out: Path, res: Result,
                   keep_work: bool, slot: int) -> tuple[dict | None, bool]:
    """Check and prepare the notebook, run it in the sandbox; status ``running`` when there is
    a run to conclude, else the final status (invalid file, wrong assignment)."""
    sid = sub.student
    if raw == b"\0":
        res.status, res.detail = "invalid-notebook", f"larger than {MAX_NOTEBOOK_BYTES} bytes"
        return None, False
    t = time.perf_counter()
    prep = prepare(raw, tpl.release, seed=limits.seed, output_cap=limits.output_chars)
    res.timings["prepare"] = round(time.perf_counter() - t, 3)
    res.flags += prep.flags
    res.detail = "; ".join(x for x in [res.detail, prep.detail] if x)
    if prep.status != "graded":
        res.status = prep.status
        return None, False
    res.status = "running"
    (out / "work").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{sid}-", dir=out / "work"))
    try:
        report, killed = _execute(_run_notebook(prep.nb, tpl), work, slot, limits)
    finally:
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)
    if report:
        res.timings.update(_phase_times(report.get("stamps", {})))
    return report, killed


def _conclude(report: dict | None, killed: bool, tpl: Template, limits: Limits, out: Path,
              res: Result) -> None:
    """Status, scores and guard flags from the runner's report; the autograded copy and the
    feedback page."""
    sid = res.student
    t = time.perf_counter()
    nb = nbformat.from_dict(report["nb"]) if report and report.get("nb") else None
    errors = [o.get("ename", "") for c in (nb.cells if nb else []) if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if killed:
        res.status = "timeout"
        res.detail = f"the notebook ran past {limits.notebook_timeout:g} s and was killed (no grade)"
    elif nb is None:
        res.status = "crashed"
        res.detail = "the sandbox returned no notebook" + (f": {report.get('error')}" if report else "")
    elif report.get("process_limit") is not None:
        res.status = "process-limit"
        res.detail = (f"the notebook filled its process table ({report['process_limit']} of "
                      f"{limits.processes} processes and threads: a fork bomb?); everything in the "
                      "sandbox was killed, tests before it were graded, the rest score 0")
    elif any("MemoryError" in e for e in errors):
        res.status, res.detail = "memory-limit", f"over {limits.memory_mb} MB (MemoryError); the rest was graded"
    elif report.get("deadline") is not None:
        res.status = "timeout"
        res.detail = (f"the notebook ran past {limits.notebook_timeout:g} s and was stopped; "
                      "cells not run score 0")
    elif report.get("died") is not None:
        res.status = "crashed"
        res.detail = ("the kernel died (os._exit, a signal or a crash); tests before it were graded, "
                      "the rest score 0" + (f"; {report['error']}" if report.get("error") else ""))
    elif report.get("timed_out_cells"):
        res.status = "timeout"
        res.detail = f"a cell ran past {limits.cell_timeout} s (interrupted; the rest was graded)"
    else:
        res.status = "graded"
    if nb is None:
        return
    for gid, pts in _scores(nb, tpl).items():
        if gid in res.tests:
            res.tests[gid] = pts if pts is None else float(pts)
    tampered, silent = read_guards(nb, str(report.get("guard_log") or ""))
    if res.status == "graded":
        for gid in silent:   # the guard ran but its report never arrived
            tampered.setdefault(gid, ["guard-silenced"])
    if tampered:
        res.flags.append("helpers-tampered")
        names = sorted({n for v in tampered.values() for n in v})
        res.detail = "; ".join(x for x in [res.detail, "tampered: " + ",".join(names)] if x)
        for gid in tampered:
            if res.tests.get(gid) is not None:
                res.tests[gid] = 0.0
    res.score = float(sum(v for v in res.tests.values() if v is not None))
    res.timings["scoring"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    graded = out / "autograded" / f"{sid}.ipynb"        # TA-only: holds the hidden tests
    graded.parent.mkdir(parents=True, exist_ok=True)
    copy_nb = strip_injected(nbformat.from_dict(json.loads(json.dumps(nb))))
    for cell in copy_nb.cells:     # the test source as written, not as instrumented
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            cell.source = tpl.source_by_id.get(meta["grade_id"], cell.source)
    nbformat.write(copy_nb, graded)
    res.timings["autograded write"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    _write_feedback(nb, tpl, sid, out, res)
    res.timings["feedback render"] = round(time.perf_counter() - t, 3)


# ---------------------------------------------------------------- the batch

def write_csv(results: list[Result], tpl: Template, path: Path) -> None:
    ids = [gid for gid, _, _ in tpl.grade_cells]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "assignment", "score", "max_score", "status", "flags", "detail", *ids])
        for r in results:
            w.writerow([r.student, r.assignment, f"{r.score:g}", f"{r.max_score:g}", r.status,
                        ";".join(r.flags), r.detail,
                        *["" if r.tests.get(g) is None else f"{r.tests[g]:g}" for g in ids]])


def summary(results: list[Result]) -> str:
    """The terminal table: one row per student, then the count of each status."""
    rows = [("student", "score", "status", "flags")]
    rows += [(r.student, f"{r.score:g}/{r.auto_max:g}", r.status, ",".join(r.flags) or "-") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    manual = results[0].max_score - results[0].auto_max if results else 0
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) +
                 f"  ({len(results)} submissions; {manual:g} more points are graded by hand)")
    return "\n".join(lines)


def _quiet_nbgrader_session_warnings(fn):
    """nbgrader 0.9.6's ``Gradebook.add_submission`` builds a ``SubmittedAssignment`` with its
    student and assignment set before adding it to the session; under SQLAlchemy 2 the autoflush
    that follows warns "Object of type <SubmittedAssignment> not in session, add operation along
    'Assignment.submissions' will not proceed". nbgrader adds the object itself right after, so
    no row is lost (tests/test_grade.py::test_results_land_in_the_gradebook reads them back): the
    warning is noise in a TA's output and in the tests', so it is ignored here, and only here."""
    import functools
    import warnings

    @functools.wraps(fn)
    def quiet(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")
            return fn(*args, **kwargs)
    return quiet


@_quiet_nbgrader_session_warnings
def write_gradebook(results: list[Result], tpl: Template, out: Path, db: Path) -> int:
    """Results into the nbgrader gradebook ``db`` (created if missing): the assignment and its
    cells (nbgrader's ``SaveCells`` on the source notebook), one submission per student with a
    notebook that ran, auto scores by nbgrader's ``SaveAutoGrades`` then the grader's verdict
    (tampered tests 0). The autograded notebooks go to ``<db folder>/autograded/<student>/A/``,
    where formgrader looks for them. Hand-graded scores of earlier runs are not kept for a
    regraded student (nbgrader's own ``autograde --force`` does the same). Returns the count."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import SaveAutoGrades, SaveCells

    asg = tpl.assignment
    db = Path(db).resolve()
    db.parent.mkdir(parents=True, exist_ok=True)
    bindir = str(Path(sys.executable).parent)   # nbgrader runs `alembic` to create a gradebook
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    url = f"sqlite:///{db}"
    with Gradebook(url) as gb:
        gb.update_or_create_assignment(asg)
    res = {"nbgrader": {"db_url": url, "assignment": asg, "notebook": asg}}
    SaveCells().preprocess(nbformat.from_dict(json.loads(json.dumps(tpl.source))), res)

    class _Session:
        """The open session, with nbgrader's per-cell commits turned into flushes."""
        def __init__(self, session):
            self._session = session

        def commit(self):
            self._session.flush()

        def __getattr__(self, name):
            return getattr(self._session, name)

    class _Batched:
        def __init__(self, gb):
            self._gb, self.db = gb, _Session(gb.db)

        def __getattr__(self, name):
            return getattr(self._gb, name)

    class BatchedSaveAutoGrades(SaveAutoGrades):
        """nbgrader's SaveAutoGrades (same rules, same rows) on one open gradebook, committed
        once per student instead of once per cell."""

        def preprocess(self, nb, resources):
            info = resources["nbgrader"]
            self.notebook_id, self.assignment_id = info["notebook"], info["assignment"]
            self.student_id, self.db_url = info["student"], info["db_url"]
            self.gradebook = _Batched(gb)
            return super(SaveAutoGrades, self).preprocess(nb, resources)

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
            BatchedSaveAutoGrades().preprocess(nb, {"nbgrader": {**res["nbgrader"], "student": r.student}})
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


def _ensure_corpus() -> None:
    """Notebooks read the course corpus, and a sandboxed kernel has no network to fetch it:
    get it now, once, so the sandbox can mount it read-only for every submission."""
    from .. import data

    try:
        data.ensure_shakespeare()
    except data.CorpusUnavailable as exc:
        print(f"lmcourse grade: warning: {exc}\nSubmissions whose notebook reads the corpus will fail "
              "in the corpus cell.", file=sys.stderr)


def grade(src: Path, assignment: str, out: Path, jobs: int | None = None, limits: Limits = Limits(),
          force: bool = False, progress: bool = True, keep_work: bool = False,
          gradebook: Path | None = None, timings: dict[str, float] | None = None) -> list[Result]:
    """Grade every submission in ``src``; ``timings`` (if given) receives the batch phases."""
    timings = {} if timings is None else timings
    sandbox.require()   # no quiet fallback: without bubblewrap the TA must say --sandbox none
    t = time.perf_counter()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    subs = find_submissions(Path(src), assignment, out / "input")
    timings["find submissions"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    _ensure_corpus()
    timings["corpus (downloaded once, then cached)"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    tpl = Template(assignment, out)
    timings["template (generate_assignment, cached per --out)"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    jobs = max(1, jobs or os.cpu_count() or 1)
    slots: queue.Queue = queue.Queue()
    for i in range(jobs):
        slots.put(i)
    results: dict[str, Result] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(subs), desc=f"grading {assignment}", unit="nb", file=sys.stderr)
    # `jobs` workers keep `jobs` sandboxes busy; one finisher thread scores, writes the
    # autograded copy and renders feedback for each run as it comes back, so a worker's slot
    # is free again as soon as its sandbox exits
    with ThreadPoolExecutor(max_workers=jobs) as pool, ThreadPoolExecutor(max_workers=1) as finisher:
        running = [pool.submit(_sandbox_stage, s, tpl, limits, out, force, keep_work, slots) for s in subs]
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
    ordered = [results[s.student] for s in subs]
    if (out / "work").is_dir() and not any((out / "work").iterdir()):
        (out / "work").rmdir()
    timings["grading (wall, all workers)"] = round(time.perf_counter() - t, 3)
    write_csv(ordered, tpl, out / "grades.csv")
    if gradebook is not None:
        t = time.perf_counter()
        write_gradebook(ordered, tpl, out, Path(gradebook))
        timings["gradebook write"] = round(time.perf_counter() - t, 3)
    return ordered


def timing_table(results: list[Result], batch: dict[str, float]) -> str:
    """``--timings``: per-submission phases (mean and total over the submissions graded in this
    run), then the batch phases."""
    fresh = [r for r in results if r.timings]
    names: list[str] = []
    for r in fresh:
        names += [n for n in r.timings if n not in names]
    lines = [f"timings ({len(fresh)} submissions run now; seconds)",
             f"  {'phase':34s} {'mean':>7s} {'total':>8s}"]
    for n in names:
        vals = [r.timings[n] for r in fresh if n in r.timings]
        lines.append(f"  {n:34s} {sum(vals) / len(vals):7.2f} {sum(vals):8.2f}")
    if fresh:
        tot = [r.seconds for r in fresh]
        lines.append(f"  {'whole submission (in its worker)':34s} {sum(tot) / len(tot):7.2f} {sum(tot):8.2f}")
    for n, v in batch.items():
        lines.append(f"  batch: {n:48s} {v:8.2f}")
    return "\n".join(lines)
