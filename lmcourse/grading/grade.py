"""``lmcourse grade``: autograde a whole class with nbgrader, one isolated course per student.

For each submission (see :mod:`.ingest` for the accepted inputs) the grader
1. checks and repairs it against the release (:mod:`.prepare`): a named status for unusable
   files, flags for renamed files, edited/deleted tests and edited metadata;
2. copies a template course (``nbgrader_config.py``, the source notebook, the release and the
   gradebook made once by ``generate_assignment``) into a private work folder and runs
   ``nbgrader autograde`` there, under limits (:class:`Limits`), in its own process session
   that is killed as a whole tree when the notebook-wide time cap is reached;
3. reads the scores from that gradebook, the guard markers from the executed notebook
   (``helpers-tampered`` zeroes the affected tests), and writes feedback HTML from which
   hidden-test source is removed and then verified absent.

One submission's failure never stops the batch. Results are cached per submission under
``OUT/results/`` keyed by the submission's bytes, the assignment source and the limits, so a
rerun skips finished work unless ``force``. The original submissions are only read.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from .build import repo_root
from .ingest import Submission, find_submissions
from .nbgrader_cli import run_nbgrader
from .prepare import prepare, read_guards, strip_injected

GRADER_VERSION = "1"
STATUSES = ("graded", "timeout", "crashed", "memory-limit", "invalid-notebook",
            "missing-notebook", "wrong-assignment")
MAX_NOTEBOOK_BYTES = 50 * 2**20


@dataclass(frozen=True)
class Limits:
    """Per-submission limits (defaults are generous for a healthy notebook in the tiny profile,
    which autogrades in seconds)."""
    notebook_timeout: float = 600.0   # whole notebook, wall clock (s): the process tree is killed
    cell_timeout: int = 120           # one cell (s): nbgrader interrupts it and goes on
    memory_mb: int = 4096             # address space of nbgrader and the kernel (RLIMIT_AS)
    output_chars: int = 1_000_000     # stdout+stderr the student's code may print, in total
    output_lines: int = 1000          # lines kept per output in the graded notebook (LimitOutput)
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


def sandbox_description() -> str:
    return ("fallback: per-submission private work folder, scrubbed environment, rlimits "
            "(address space, file size, no core dumps), own process session killed as a tree; "
            "NO filesystem or network isolation (bubblewrap support is not implemented yet)")


class Template:
    """The assignment, generated once: course folder to copy, release, grade cells."""

    def __init__(self, assignment: str, workdir: Path, root: Path | None = None):
        root = Path(root or repo_root())
        src = root / "autograder" / "source" / assignment / f"{assignment}.ipynb"
        if not src.is_file():
            raise FileNotFoundError(f"no source notebook {src} (is the assignment name right?)")
        self.assignment = assignment
        self.course = Path(workdir) / "template"
        if self.course.exists():
            shutil.rmtree(self.course)
        (self.course / "source" / assignment).mkdir(parents=True)
        shutil.copy(root / "autograder" / "nbgrader_config.py", self.course / "nbgrader_config.py")
        shutil.copy(src, self.course / "source" / assignment / f"{assignment}.ipynb")
        run_nbgrader(["generate_assignment", assignment, "--force", "--log-level=WARN"], self.course)
        self.source = nbformat.read(src, as_version=4)
        self.release = nbformat.read(self.course / "release" / assignment / f"{assignment}.ipynb",
                                     as_version=4)
        self.fingerprint = hashlib.sha256(src.read_bytes()).hexdigest()
        self.grade_cells = [(c.metadata["nbgrader"]["grade_id"], c.cell_type,
                             float(c.metadata["nbgrader"].get("points", 0)))
                            for c in self.source.cells
                            if c.metadata.get("nbgrader", {}).get("grade")]
        self.max_score = sum(p for _, _, p in self.grade_cells)
        self.release_source = {c.metadata["nbgrader"]["grade_id"]: c.source for c in self.release.cells
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

def _sandbox_env(work: Path) -> dict[str, str]:
    from .. import data

    bindir = str(Path(sys.executable).parent)
    env = {"PATH": os.pathsep.join([bindir, "/usr/local/bin", "/usr/bin", "/bin"]),
           "HOME": str(work / "home"), "TMPDIR": str(work / "tmp"),
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
           "PYTHONNOUSERSITE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "LMCOURSE_DATA_DIR": str(data.data_dir())}
    for d in ("home", "tmp"):
        (work / d).mkdir(parents=True, exist_ok=True)
    return env


_LIMITED = ("import os, resource, sys\n"
            "mem = int(sys.argv[1]) * 2**20\n"
            "resource.setrlimit(resource.RLIMIT_AS, (mem, mem))\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 2**20, 512 * 2**20))\n"
            "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
            "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n")


def _limited(memory_mb: int, args: list[str]) -> list[str]:
    """``python args`` under rlimits. The limits are set in the child just before it becomes
    Python again (exec), not through ``preexec_fn``, which is unsafe in a threaded grader."""
    return [sys.executable, "-c", _LIMITED, str(int(memory_mb)), *args]


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
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def _kill_tree(proc: subprocess.Popen) -> None:
    victims = _descendants(proc.pid) if Path("/proc").is_dir() else []
    for sig_target in [proc.pid, *victims]:
        try:
            os.kill(sig_target, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _nbgrader(args: list[str], course: Path, env: dict, limits: Limits, timeout: float,
              log: Path) -> tuple[int, bool]:
    """Run nbgrader in its own session under rlimits; (exit code, timed out)."""
    cmd = _limited(limits.memory_mb, ["-m", "nbgrader", *args, f"--CourseDirectory.root={course}",
                                      f"--db=sqlite:///{course / 'gradebook.db'}"])
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            _kill_tree(proc)
            return proc.returncode, True


def _tail(path: Path, n: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _errors(nb) -> list[str]:
    return [o.get("ename", "") for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def _scores(course: Path, assignment: str, student: str) -> dict[str, tuple[float | None, str]] | None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        try:
            sub = gb.find_submission_notebook(assignment, assignment, student)
        except MissingEntry:
            return None
        return {g.name: (g.auto_score if g.cell_type == "code" else None, g.cell_type) for g in sub.grades}


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


def grade_one(sub: Submission, tpl: Template, limits: Limits, out: Path, force: bool = False,
              keep_work: bool = False) -> Result:
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
                return old
        except (ValueError, TypeError):
            pass
    res.key = key
    try:
        if sub.path is not None:
            _grade(sub, raw, tpl, limits, out, res, keep_work)
    except Exception as exc:  # noqa: BLE001 (one submission never stops the batch)
        res.status, res.detail = "crashed", f"grader error: {type(exc).__name__}: {exc}"[:300]
    res.seconds = round(time.perf_counter() - start, 2)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(asdict(res), indent=1))
    return res


def _grade(sub: Submission, raw: bytes, tpl: Template, limits: Limits, out: Path, res: Result,
           keep_work: bool) -> None:
    asg, sid = tpl.assignment, sub.student
    if raw == b"\0":
        res.status, res.detail = "invalid-notebook", f"larger than {MAX_NOTEBOOK_BYTES} bytes"
        return
    prep = prepare(raw, tpl.release, seed=limits.seed, output_cap=limits.output_chars)
    res.flags += prep.flags
    res.detail = "; ".join(x for x in [res.detail, prep.detail] if x)
    if prep.status != "graded":
        res.status = prep.status
        return
    (out / "work").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{sid}-", dir=out / "work"))
    try:
        course = work / "course"
        shutil.copytree(tpl.course, course)
        dest = course / "submitted" / sid / asg / f"{asg}.ipynb"
        dest.parent.mkdir(parents=True)
        nbformat.write(prep.nb, dest)
        env = _sandbox_env(work)
        log = work / "nbgrader.log"
        rc, timed_out = _nbgrader(
            ["autograde", asg, "--student", sid, "--force", "--log-level=INFO",
             f"--Execute.timeout={limits.cell_timeout}",
             f"--ExecutePreprocessor.timeout={limits.cell_timeout}",
             f"--LimitOutput.max_lines={limits.output_lines}"],
            course, env, limits, limits.notebook_timeout, log)
        graded_nb = course / "autograded" / sid / asg / f"{asg}.ipynb"
        nb = nbformat.read(graded_nb, as_version=4) if graded_nb.is_file() and not timed_out else None
        errors = _errors(nb) if nb is not None else []
        text = _tail(log, 200_000)
        if timed_out:
            res.status = "timeout"
            res.detail = f"notebook ran past {limits.notebook_timeout:g} s and was killed"
        elif "MemoryError" in errors or "MemoryError" in text:
            res.status, res.detail = "memory-limit", f"over {limits.memory_mb} MB"
        elif "CellTimeoutError" in errors or "CellTimeoutError" in text or "Timeout waiting" in text:
            res.status = "timeout"
            res.detail = f"a cell ran past {limits.cell_timeout} s (interrupted; the rest was graded)"
        elif rc != 0 or nb is None or "DeadKernelError" in text or "Kernel died" in text:
            res.status = "crashed"
            last = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or ["no log"]
            res.detail = f"nbgrader exit {rc}: {last[0][:200]}"
        else:
            res.status = "graded"
        scores = _scores(course, asg, sid) if nb is not None else None
        if scores is None:
            return
        for gid, (pts, _kind) in scores.items():
            if gid in res.tests:
                res.tests[gid] = pts if pts is None else float(pts)
        tampered, silent = read_guards(nb)
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
        _write_feedback(nb, graded_nb, course, env, limits, tpl, sid, out, res, log)
    finally:
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)


def _write_feedback(nb, graded_nb: Path, course: Path, env: dict, limits: Limits, tpl: Template,
                    sid: str, out: Path, res: Result, log: Path) -> None:
    asg = tpl.assignment
    _feedback_notebook(nb, tpl)
    nbformat.write(nb, graded_nb)
    rc, _ = _nbgrader(["generate_feedback", asg, "--student", sid, "--force", "--log-level=WARN"],
                      course, env, limits, 300, log)
    made = course / "feedback" / sid / asg / f"{asg}.html"
    if rc != 0 or not made.is_file():
        res.flags.append("no-feedback")
        return
    text = made.read_text(encoding="utf-8", errors="replace")
    if _leaks(text, tpl.hidden_lines()):
        res.flags.append("feedback-withheld")   # never hand out hidden tests
        return
    dest = out / "feedback" / f"{sid}.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    res.feedback = str(dest.relative_to(out))


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


def grade(src: Path, assignment: str, out: Path, jobs: int | None = None, limits: Limits = Limits(),
          force: bool = False, progress: bool = True, keep_work: bool = False) -> list[Result]:
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    subs = find_submissions(Path(src), assignment, out / "input")
    tpl = Template(assignment, out)
    jobs = max(1, jobs or os.cpu_count() or 1)
    results: dict[str, Result] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(subs), desc=f"grading {assignment}", unit="nb", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(grade_one, s, tpl, limits, out, force, keep_work): s for s in subs}
        for fut in as_completed(futures):
            r = fut.result()
            results[r.student] = r
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    ordered = [results[s.student] for s in subs]
    if (out / "work").is_dir() and not any((out / "work").iterdir()):
        (out / "work").rmdir()
    write_csv(ordered, tpl, out / "grades.csv")
    return ordered
