"""`lmcourse grade` on a catalogue of bad submissions built from the real notebook 01.

One batch (``-j 2``) holds every case beside a correct student, so the test also shows that
no submission disturbs another one's grade. Time caps are small to keep the file quick.
The attacks on the sandbox (reading the course, writing elsewhere, network, fork bomb) are in
the same batch; what they must not achieve is asserted only where bubblewrap is in force.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import re
import zipfile
from pathlib import Path

import nbformat
import pytest

from lmcourse.authoring.course import perfect_submission
from lmcourse.commands.main import main
from lmcourse.grading import sandbox
from lmcourse.grading.feedback import sentence
from lmcourse.grading.ingest import IngestError, find_submissions, safe_extract
from lmcourse.grading.nbgrader_cli import run_nbgrader
from tests.conftest import ROOT
from tests.grading.conftest import LIMITS, Batch, hidden_lines

# one worker builds the session's batch once (shared with test_forgery; pytest-xdist --dist loadgroup)
pytestmark = [pytest.mark.xdist_group("grader-batches"), pytest.mark.slow]

A = "01_ngram"
SOURCE = nbformat.read(ROOT / "autograder" / "source" / A / f"{A}.ipynb", as_version=4)
STUDENT = nbformat.read(ROOT / "notebooks" / f"{A}.ipynb", as_version=4)
AUTO_MAX = sum(c.metadata["nbgrader"]["points"] for c in SOURCE.cells
               if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade"))


def perfect():
    return perfect_submission(STUDENT, SOURCE)


def cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def with_answer(grade_id, source):
    nb = perfect()
    cell(nb, grade_id).source = source
    return nb


BWRAP = sandbox.mode()[0] == "bubblewrap"
needs_bwrap = pytest.mark.skipif(not BWRAP, reason=f"bubblewrap sandbox not in force: {sandbox.mode()[1]}")
# without bubblewrap the grader refuses unless told: these tests then say so explicitly
SANDBOX = [] if BWRAP else ["--sandbox", "none"]
# a detached `sleep` the sigint_loop student leaves behind; its argument is unique to this test
# run, so a leftover of another run (e.g. one in the weaker fallback mode) is not counted here
SLEEPER = str(1_000_000 + os.getpid())


def snoop_source(subs: Path, out: Path) -> str:
    """Tries every forbidden read and write, and the network; prints one line per attempt."""
    reads = {"source": ROOT / "autograder" / "source" / A / f"{A}.ipynb",
             "master": ROOT / "autograder" / "masters" / f"{A}.py",
             "gradebook": out / "template" / "gradebook.db",
             "other_submission": subs / "submitted" / "correct" / A / f"{A}.ipynb"}
    writes = {"other_folder": subs / "submitted" / "correct" / A / "evil.txt",
              "results": out / "results" / "correct.json",
              "work": out / "work" / "evil.txt"}
    return (f"import socket\n"
            f"for _n, _p in {dict((k, str(v)) for k, v in reads.items())!r}.items():\n"
            f"    try:\n        open(_p, 'rb').read(); print('SNOOP read', _n, 'ok')\n"
            f"    except OSError:\n        print('SNOOP read', _n, 'blocked')\n"
            f"for _n, _p in {dict((k, str(v)) for k, v in writes.items())!r}.items():\n"
            f"    try:\n        open(_p, 'w').write('pwned'); print('SNOOP write', _n, 'ok')\n"
            f"    except OSError:\n        print('SNOOP write', _n, 'blocked')\n"
            f"try:\n    socket.create_connection(('1.1.1.1', 53), timeout=3).close(); print('SNOOP net ok')\n"
            f"except OSError:\n    print('SNOOP net blocked')\n"
            f"answer_q1 = 'B'\n")


def catalogue(subs: Path | None = None, out: Path | None = None) -> dict[str, object]:
    """student -> notebook (or raw bytes, or None for an empty folder)."""
    c: dict[str, object] = {"correct": perfect(), "blank": STUDENT}   # blank: the release, untouched
    c["wrong"] = with_answer("q1", "answer_q1 = 'A'\n")
    # an exception in one answer, a syntax error in another (one kernel run for both)
    c["errors"] = with_answer("mle_prob", "def mle_prob(table, context, word):\n"
                                          "    raise RuntimeError('not yet')\n")
    cell(c["errors"], "q1").source = "answer_q1 = 'B'\nif True\n    pass\n"
    c["loop"] = with_answer("q1", "while True:\n    pass\nanswer_q1 = 'B'\n")
    # the detached sleeper is started through libc: a graded kernel refuses subprocess and os.fork
    # from the student's code (lmcourse.marking.confine.arm), and the sandbox must still end what gets past
    # (it waits in sleep, not in a spin: the cap and the kill are the same, and it leaves the cores to the
    # other kernels being graded; `loop` above is the spinning one)
    c["sigint_loop"] = with_answer("q1", "import ctypes, signal\n_libc = ctypes.CDLL(None)\n"
                                         "if _libc.fork() == 0:\n    _libc.setsid()\n"
                                         f"    _libc.execlp(b'sleep', b'sleep', b'{SLEEPER}', None)\n"
                                         "    _libc._exit(0)\n"
                                         "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                         "import time\n"
                                         "answer_q1 = 'B'\nwhile True:\n    time.sleep(1)\n")
    c["invalid_json"] = b'{"cells": [ {"cell_type": "code", '
    c["empty"] = b""
    c["renamed"] = perfect()                     # written as "01_ngram (1).ipynb"
    wrong_asg = nbformat.v4.new_notebook()
    wrong_asg.cells = [nbformat.v4.new_code_cell("x = 1")]
    wrong_asg.cells[0].metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False,
                                               "grade_id": "rnn_forward", "schema_version": 3}
    c["wrong_assignment"] = wrong_asg
    nb = perfect()
    nb.cells = [x for x in nb.cells
                if x.metadata.get("nbgrader", {}).get("grade_id") not in {"pad_sentence_tests", "q1_tests"}]
    cell(nb, "count_ngrams_tests").metadata["nbgrader"]["points"] = 100   # and edited metadata
    c["deleted_tests"] = nb
    # wrong answer + its test edited to pass it: restored and graded anyway
    nb = with_answer("q1", "answer_q1 = 'A'\n")
    cell(nb, "q1_tests").source = "pass\n"
    c["edited_tests"] = nb
    # wrong answers whose tests compare with np.allclose / math.isclose / check_close, which
    # the student replaced so that everything compares equal
    nb = with_answer("mle_prob", "import numpy as np, math, lmcourse.checks\n"
                                 "np.allclose = np.isclose = math.isclose = lambda *a, **k: True\n"
                                 "check_close = lmcourse.checks.check_close = lambda *a, **k: None\n"
                                 "def mle_prob(table, context, word):\n    return 0.5\n")
    c["monkeypatch"] = nb
    c["missing"] = None
    # the kernel dies before the last answer: the tests before it count
    c["exit"] = with_answer("q1", "import os\nos._exit(3)\n")
    c["membomb"] = with_answer("q1", "_hog = []\nwhile True:\n    _hog.append(b'x' * (64 * 2**20))\n")
    c["flood"] = with_answer("q1", "print('\\n'.join(map(str, range(10**7))))\nimport os\n"
                                   "os.write(1, b'y\\n' * 5_000_000)\nanswer_q1 = 'B'\n")
    # IPython hooks that hide the failure of the next test, each with a wrong answer
    c["custom_exc"] = with_answer("q1", "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)\n"
                                        "answer_q1 = 'A'\n")
    c["showtraceback"] = with_answer("q1", "_ip = get_ipython()\n_ip.showtraceback = lambda *a, **k: None\n"
                                           "_ip._showtraceback = lambda *a, **k: None\nanswer_q1 = 'A'\n")
    # a function defined under the name a test calls: the test would call the student's copy
    c["shadow"] = with_answer("pad_sentence", "def check_equal(*a, **k):\n    return None\n\n"
                                              "def pad_sentence(words, n):\n    return list(words)\n")
    if BWRAP and subs is not None and out is not None:
        # the fallback does not hide the grader's files (documented): the attacks would succeed
        # there and corrupt the other students' results this batch checks, so run them only
        # where the sandbox must stop them
        c["snoop"] = with_answer("q1", snoop_source(subs, out))
    if BWRAP:   # (the fallback has no process table of its own: never run a fork bomb there)
        # exponential: every child forks too; the sandbox must stop it at its process limit. Through
        # libc: a graded kernel refuses os.fork from the student's code (lmcourse.marking.confine.arm), and
        # the watchdog is for what gets past that (ctypes, which the source scan flags)
        c["fork_bomb"] = with_answer("q1", "import ctypes\n_fork = ctypes.CDLL(None).fork\n"
                                           "while True:\n    _fork()\n")
    return c


def write_batch(folder: Path, out: Path | None = None, only: set[str] | None = None,
                extra: dict[str, object] | None = None) -> Path:
    """The catalogue (and ``extra`` students: the forgery attempts) in nbgrader's submitted/ layout."""
    students = catalogue(folder, out)
    for student, nb in (extra or {}).items():
        assert student not in students or student == "correct", f"{student}: a name both catalogues use"
        students.setdefault(student, nb)
    for student, nb in students.items():
        if only is not None and student not in only:
            continue
        d = folder / "submitted" / student / A
        d.mkdir(parents=True)
        name = f"{A} (1).ipynb" if student == "renamed" else f"{A}.ipynb"
        if isinstance(nb, bytes):
            (d / name).write_bytes(nb)
        elif nb is not None:
            nbformat.write(nb, d / name)
    return folder


def tree_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def batch(grader_batch) -> Batch:
    """This catalogue graded in one batch (``-j 2``) with test_forgery's students
    (tests/grading/conftest.py): one grader run for both files."""
    return grader_batch


EXPECTED = {   # student: (status, flags that must be present, score: exact / "<" full / None = 0)
    "correct": ("graded", set(), AUTO_MAX),
    "blank": ("graded", set(), 0),
    "renamed": ("graded", {"renamed"}, AUTO_MAX),
    "wrong": ("graded", set(), AUTO_MAX - 1),
    "errors": ("graded", set(), "<"),
    "loop": ("timeout", set(), AUTO_MAX - 1),
    "sigint_loop": ("timeout", set(), AUTO_MAX - 1),
    "exit": ("crashed", set(), AUTO_MAX - 1),
    "membomb": ("memory-limit", set(), AUTO_MAX - 1),
    "flood": ("graded", set(), AUTO_MAX),
    "custom_exc": ("graded", set(), AUTO_MAX - 1),
    "showtraceback": ("graded", set(), AUTO_MAX - 1),
    "shadow": ("graded", set(), "<"),
    "invalid_json": ("invalid-notebook", set(), 0),
    "empty": ("invalid-notebook", set(), 0),
    "wrong_assignment": ("wrong-assignment", set(), 0),
    "missing": ("missing-notebook", set(), 0),
    "deleted_tests": ("graded", {"tests-deleted", "metadata-edited"}, AUTO_MAX),
    "edited_tests": ("graded", {"tests-edited"}, AUTO_MAX - 1),
    "monkeypatch": ("graded", set(), "<"),
}
if BWRAP:
    EXPECTED["snoop"] = ("graded", set(), AUTO_MAX)
    EXPECTED["fork_bomb"] = ("process-limit", set(), AUTO_MAX - 1)


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_catalogue(batch, student):
    rows = batch.rows
    status, flags, score = EXPECTED[student]
    row = rows[student]
    assert row["status"] == status, row
    assert flags <= set(filter(None, row["flags"].split(";"))), row
    if score == "<":
        assert 0 <= float(row["score"]) < AUTO_MAX, row
    else:
        assert float(row["score"]) == score, row
    if status != "graded":
        assert row["detail"], f"{student}: a non-graded status must say why"
    assert float(row["max_score"]) == AUTO_MAX + 2   # + the hand-graded free-text answer
    assert float(row["auto_max"]) == AUTO_MAX         # the part autograding can award


def test_every_status_is_explained_and_clean_students_unflagged(batch):
    rows = batch.rows
    assert rows["correct"]["flags"] == "" and rows["wrong"]["flags"] == ""
    # the renamed copy of the correct notebook gets exactly the same per-test points
    tests = [k for k in rows["correct"] if k.endswith("_tests")]
    assert [rows["correct"][t] for t in tests] == [rows["renamed"][t] for t in tests]


def test_specific_tests_lose_points(batch):
    rows = batch.rows
    assert rows["wrong"]["q1_tests"] == "0"
    assert rows["edited_tests"]["q1_tests"] == "0"      # the edit was undone
    assert rows["errors"]["mle_prob_tests"] == "0" and rows["errors"]["q1_tests"] == "0"
    assert rows["errors"]["pad_sentence_tests"] == "1"
    assert rows["deleted_tests"]["pad_sentence_tests"] == "1"   # restored, and it passes
    # patched comparisons and IPython hooks change nothing: the grader judges the records in its
    # own process, so each wrong answer costs its own test and the others count
    assert rows["monkeypatch"]["mle_prob_tests"] == "0"
    assert rows["monkeypatch"]["pad_sentence_tests"] == "1"
    # a cell-level timeout interrupts that cell only: the rest of the notebook is graded
    assert rows["loop"]["q1_tests"] == "0" and "cell" in rows["loop"]["detail"]
    # a loop that ignores SIGINT is ended either by nbclient giving up on the cell (interrupted,
    # the rest graded) or, if the notebook cap comes first, by the cap (stopped / killed)
    detail = rows["sigint_loop"]["detail"]
    assert any(w in detail for w in ("interrupted", "stopped", "killed")), detail
    assert rows["sigint_loop"]["generate_tests"] == "2"        # graded before the loop
    assert "died" in rows["exit"]["detail"] and rows["exit"]["q1_tests"] == "0"
    for student in ("custom_exc", "showtraceback"):
        assert rows[student]["q1_tests"] == "0", rows[student]
        assert rows[student]["pad_sentence_tests"] == "1", rows[student]
    assert rows["shadow"]["pad_sentence_tests"] == "0"


def test_feedback_has_no_hidden_tests(batch):
    out, rows = batch.out, batch.rows
    hidden = hidden_lines(SOURCE)
    assert hidden, "notebook 01 is expected to have hidden tests"
    ours = set(EXPECTED)             # (the forgers' own pages: test_forgery's business)
    pages = sorted(p for p in (out / "feedback").glob("*.html") if p.stem in ours)
    graded = {s for s, r in rows.items() if r["status"] == "graded" and s in ours}
    assert graded <= {p.stem for p in pages}
    for page in pages:
        text = html.unescape(page.read_text())
        leaked = [h for h in hidden if h in text]
        assert not leaked, f"{page.name} shows hidden test source: {leaked[:2]}"
        assert "Injected by lmcourse grade" not in text


def test_feedback_page_shows_the_tables_score_and_names_each_test_by_its_exercise(batch):
    page = (batch.out / "feedback" / "correct.html").read_text()
    # one score everywhere: the autograded points, and the hand-graded part named
    assert f"(Score: {AUTO_MAX:g}/{AUTO_MAX:g} auto, +2 by hand)</h4>" in page
    assert ">Test cell<" not in page and "Exercise 1 tests (<code>pad_sentence_tests</code>)" in page
    # wrong-assignment: the reason in grades.csv, and a page for the student that says it
    why = batch.rows["wrong_assignment"]["detail"]
    assert why.startswith("none of this assignment's graded cells") and why.endswith(
        "was another notebook submitted?"), why
    wrong = html.unescape((batch.out / "feedback" / "wrong_assignment.html").read_text())
    assert "wrong-assignment" in wrong and sentence(why) in wrong
    assert f"(Score: 0/{AUTO_MAX:g} auto, +2 by hand)" in wrong


def test_originals_untouched_and_rerun_is_idempotent(batch, capsys):
    subs, out, rows, before, args = batch.subs, batch.out, batch.rows, batch.before, batch.args
    assert tree_hash(subs) == before
    results = {p.name: p.read_text() for p in (out / "results").glob("*.json")}
    capsys.readouterr()
    assert main(args) == 0                         # no --force: everything comes from the cache
    table = capsys.readouterr().out                # and the table says so, per student
    assert re.search(rf"correct\s+{AUTO_MAX:g}/{AUTO_MAX:g} auto, \+2 by hand\s+graded \(cached\)", table), table
    assert f"({len(rows)} submissions; 2 more points are graded by hand; {len(rows)} cached" in table, table
    assert "wrong_assignment: wrong-assignment: none of this assignment's graded cells" in table, table
    assert {p.name: p.read_text() for p in (out / "results").glob("*.json")} == results
    assert {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())} == rows


def test_zip_and_flat_folder_inputs(tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    nbformat.write(perfect(), flat / "Ada Lovelace.ipynb")
    (flat / "bob.ipynb").write_bytes(b"")
    subs = find_submissions(flat, A, tmp_path / "unpack")
    assert [(s.student, s.path.name) for s in subs] == [("Ada_Lovelace", "Ada Lovelace.ipynb"),
                                                         ("bob", "bob.ipynb")]
    z = tmp_path / "lms.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(flat / "bob.ipynb", "export/carol/01_ngram (2).ipynb")
        zf.write(flat / "bob.ipynb", "export/dan/01_ngram.ipynb")
    # one wrapper folder, then one folder per student
    subs = find_submissions(z, A, tmp_path / "unpack")
    assert [(s.student, s.path.name, s.flags) for s in subs] == [
        ("carol", "01_ngram (2).ipynb", ["renamed"]), ("dan", "01_ngram.ipynb", [])]


def test_a_grader_error_keeps_its_traceback(tmp_path, monkeypatch):
    """The grader's own failure on a submission: the student is marked crashed, the batch goes on, the
    whole traceback (the detail column holds 300 characters) is in --out's grader-errors.log, and a
    rerun grades the submission again rather than reading the failure back from the cache."""
    from lmcourse.grading import grade

    def broken(raw, *a, **k):
        raise RuntimeError("the grader tripped")

    monkeypatch.setattr(grade, "_prepare_and_run", broken)
    subs, out = tmp_path / "subs", tmp_path / "out"
    for student in ("ada", "bob"):
        (subs / student).mkdir(parents=True)
        nbformat.write(perfect(), subs / student / f"{A}.ipynb")
    assert main(["grade", A, str(subs), "--out", str(out), "-j", "2", "--no-progress", "--gradebook", "none",
                 *SANDBOX]) == 0
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    assert {s: (r["status"], r["detail"]) for s, r in rows.items()} == {
        s: ("crashed", f"grader error (traceback in {grade.GRADER_ERRORS}): RuntimeError: the grader tripped")
        for s in ("ada", "bob")}
    log = (out / grade.GRADER_ERRORS).read_text()
    assert log.count("Traceback (most recent call last)") == 2 and "--- ada (01_ngram)" in log
    assert 'raise RuntimeError("the grader tripped")' in log
    monkeypatch.undo()                      # the grader mended: a rerun grades them, nothing read from the cache
    assert main(["grade", A, str(subs), "--out", str(out), "-j", "2", "--no-progress", "--gradebook", "none",
                 *SANDBOX]) == 0
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    assert {s: (r["status"], float(r["score"])) for s, r in rows.items()} == {s: ("graded", AUTO_MAX)
                                                                              for s in ("ada", "bob")}


def test_zip_traversal_refused(tmp_path):
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../../escape.ipynb", "{}")
    with pytest.raises(IngestError, match="unsafe path"):
        safe_extract(z, tmp_path / "x")
    assert not (tmp_path.parent / "escape.ipynb").exists()


def test_results_cache_is_json(batch):
    out = batch.out
    data = json.loads((out / "results" / "correct.json").read_text())
    assert data["status"] == "graded" and re.fullmatch(r"[0-9a-f]{64}", data["key"])


def _output_text(out: Path, student: str) -> str:
    nb = nbformat.read(out / "autograded" / f"{student}.ipynb", as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_output_flood_is_capped(batch):
    out, rows = batch.out, batch.rows
    assert rows["flood"]["status"] == "graded"
    assert (out / "autograded" / "flood.ipynb").stat().st_size < 4_000_000
    assert (out / "feedback" / "flood.html").stat().st_size < 6_000_000
    assert "output cut" in _output_text(out, "flood")


@needs_bwrap   # the fallback's session kill misses a child that detaches into its own session
def test_whole_notebook_cap_kills_the_process_tree(batch):
    """The sigint_loop student started a detached `sleep` before looping: none may survive."""
    left = running_with(SLEEPER)
    assert not left, f"processes of a killed sandbox still run: {left}"


def running_with(mark: str) -> list[str]:
    """The pids of this machine's processes whose command line holds ``mark``."""
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark.encode() in (proc / "cmdline").read_bytes():
                left.append(proc.name)
        except OSError:
            continue
    return left


@needs_bwrap
def test_sandbox_blocks_course_other_students_and_network(batch):
    subs, out, rows, before = batch.subs, batch.out, batch.rows, batch.before
    text = _output_text(out, "snoop")
    lines = sorted(ln for ln in text.splitlines() if ln.startswith("SNOOP"))
    assert lines == sorted(["SNOOP read source blocked", "SNOOP read master blocked",
                            "SNOOP read gradebook blocked", "SNOOP read other_submission blocked",
                            "SNOOP write other_folder blocked", "SNOOP write results blocked",
                            "SNOOP write work blocked", "SNOOP net blocked"]), text[:2000]
    assert tree_hash(subs) == before
    assert json.loads((out / "results" / "correct.json").read_text())["score"] == AUTO_MAX
    assert rows["correct"]["score"] == rows["snoop"]["score"] == str(AUTO_MAX)


def test_feedback_never_points_at_ta_files(batch):
    out = batch.out
    ours = set(EXPECTED)
    for page in (out / "feedback").glob("*.html"):
        if page.stem == "snoop" or page.stem not in ours:      # its own code names those paths
            continue
        text = page.read_text()
        assert str(out) not in text and "gradebook.db" not in text, page.name


def test_results_land_in_the_gradebook(batch):
    from nbgrader.api import Gradebook

    out, rows, args = batch.out, batch.rows, batch.args
    db = Path(args[args.index("--gradebook") + 1])
    with Gradebook(f"sqlite:///{db}") as gb:
        sub = gb.find_submission_notebook(A, A, "correct")
        assert sub.score == AUTO_MAX and sub.max_score == AUTO_MAX + 2
        assert gb.find_grade("mle_prob_tests", A, A, "monkeypatch").auto_score == 0
        assert gb.find_grade("q2", A, A, "correct").needs_manual_grade
        students = {s.id for s in gb.students}
    assert {s for s, r in rows.items() if (out / "autograded" / f"{s}.ipynb").is_file()} <= students
    assert (db.parent / "autograded" / "correct" / A / f"{A}.ipynb").is_file()   # for formgrader
    export = db.parent / "export.csv"
    run_nbgrader(["export", f"--to={export}"], db.parent)
    exported = {r["student_id"]: r for r in csv.DictReader(export.read_text().splitlines())}
    assert float(exported["correct"]["raw_score"]) == AUTO_MAX
    assert float(exported["wrong"]["raw_score"]) == AUTO_MAX - 1


def test_same_grades_with_one_worker(batch, tmp_path):
    """Determinism: a second run, serial, of part of the batch gives identical rows."""
    rows = batch.rows
    some = {"correct", "errors", "monkeypatch"}      # full marks, an exception and a syntax error, tampering
    subs = write_batch(tmp_path / "class", only=some)
    out = tmp_path / "grades"
    assert main(["grade", A, str(subs), "--out", str(out), "-j", "1", *LIMITS, "--no-progress",
                 "--gradebook", "none", *SANDBOX]) == 0
    again = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    assert again == {s: rows[s] for s in some}


@needs_bwrap
def test_fork_bomb_stopped_at_the_process_limit(batch):
    """Stopped by the process-table watchdog, not by the notebook cap (which would give
    status `timeout`; the kernel would otherwise stall until then), and nothing of it is left
    running. No wall-clock bound: on a loaded 2-core machine the forks themselves are slow."""
    rows = batch.rows
    assert rows["fork_bomb"]["status"] == "process-limit", rows["fork_bomb"]
    assert rows["fork_bomb"]["generate_tests"] == "2"          # graded before the bomb
    assert "process" in rows["fork_bomb"]["detail"]
    mine = range(sandbox.UID_BASE + 256 * os.getpid(), sandbox.UID_BASE + 256 * (os.getpid() + 1))
    left = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _uid(p) in mine]
    assert not left, f"processes of a sandbox uid still run: {left}"


def _uid(proc: Path) -> int:
    try:
        return proc.stat().st_uid
    except OSError:
        return -1


def test_grade_flags_default_to_the_limits(monkeypatch, tmp_path):
    """`lmcourse grade`'s limit flags are made from `Limits`: no default typed twice."""
    from lmcourse.grading import grade as grade_module
    from lmcourse.grading.limits import Limits

    seen = []
    monkeypatch.setattr(grade_module, "grade", lambda src, asg, out, **kw: seen.append(kw["limits"]) or [])
    common = ["grade", A, str(tmp_path), "--out", str(tmp_path / "out"), "--gradebook", "none", *SANDBOX]
    assert main(common) == 0
    assert main([*common, "--cell-timeout", "7", "--notebook-timeout", "9.5", "--memory-mb", "100",
                 "--output-chars", "5", "--processes", "3"]) == 0
    assert seen == [Limits(), Limits(notebook_timeout=9.5, cell_timeout=7, memory_mb=100, output_chars=5,
                                     processes=3)]
