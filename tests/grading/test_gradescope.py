"""`lmcourse grade gradescope`: the autograder zip, exercised here without Gradescope.

What is real: the zip as written; its layout as Gradescope unpacks it (``source/`` = the zip,
``run_autograder`` copied beside it) under a temp folder standing in for ``/autograder``
(``LMCOURSE_AUTOGRADER_ROOT``); ``setup.sh`` run by bash, its last step (the assignment's release)
for real; ``run_autograder`` run by bash once per submission, as Gradescope's harness runs it in
a fresh container. What is simulated: ``setup.sh``'s apt-get and pip steps only print
(``LMCOURSE_GS_DRY_RUN=1``), and the course's own venv stands in for the one they would
install (``LMCOURSE_GS_VENV``); the container itself (here the grader's bubblewrap sandbox is
used where it works, as ``--sandbox auto`` does in a container that allows it).

The hostile class (correct, blank, wrong, an exception and a syntax error, an infinite loop,
tampering, a flood of output) goes through run_autograder one submission at a time; the same
notebooks are in the shared `lmcourse grade` batch of 01 (tests/grading/conftest.py, same limits):
each results.json must follow Gradescope's documented format and say what its grades.csv row says."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from lmcourse.commands.main import main
from lmcourse.grading.gradescope import CONFIG, OUT, VISIBILITIES, build_zip, pinned_requirements
from tests.grading.conftest import LIMITS, hidden_lines  # LIMITS: the shared batch's, held against its rows
from tests.grading.test_grade import AUTO_MAX, BWRAP, SOURCE, STUDENT, A, catalogue

HOSTILE = ("correct", "blank", "wrong", "errors", "loop", "monkeypatch", "flood")
VENV = Path(sys.executable).parent.parent


def hostile_class() -> dict[str, nbformat.NotebookNode]:
    c = catalogue()
    return {"blank": STUDENT, **{s: c[s] for s in HOSTILE if s != "blank"}}


# ---------------------------------------------------------------- quick: the zip

def _unzip(zip_path: Path, root: Path) -> None:
    """As Gradescope does: the zip into ROOT/source, run_autograder copied to ROOT (modes kept)."""
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            target = root / "source" / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod((info.external_attr >> 16) & 0o777 or 0o644)
    (root / "run_autograder").write_bytes((root / "source" / "run_autograder").read_bytes())
    (root / "run_autograder").chmod(0o755)


def test_zip_layout_and_pins(tmp_path):
    names = build_zip(A, tmp_path / "a.zip")
    again = build_zip(A, tmp_path / "b.zip")
    assert names == again and (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.zip") as zf:
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in zf.infolist()}
        assert modes["setup.sh"] == modes["run_autograder"] == 0o755     # at the zip's root, executable
        assert f"course/autograder/source/{A}/{A}.ipynb" in modes and "course/lmcourse/checks.py" in modes
        assert not [n for n in modes if "__pycache__" in n or n.endswith(".pyc")]
        assert not [n for n in modes if "/source/" in n and A not in n]        # no other assignment's tests
        cfg = json.loads(zf.read(CONFIG))
        assert cfg["assignment"] == A and cfg["hidden_visibility"] == "after_due_date" and cfg["sandbox"] == "auto"
        pins = zf.read("constraints.txt").decode().splitlines()
        setup = zf.read("setup.sh").decode()
    from importlib.metadata import version

    assert f"nbgrader=={version('nbgrader')}" in pins and f"numpy=={version('numpy')}" in pins
    torch = version("torch").split("+")[0]
    assert f"torch=={torch}" in pins
    assert "https://download.pytorch.org/whl/cpu" in setup and f'"torch=={torch}"' in setup
    assert not any(p.startswith(("pytest", "ruff", "nvidia")) for p in pins)   # dev extras / CUDA: not needed
    assert set(pinned_requirements()) >= {"nbgrader", "nbclient", "torch", "numpy"}


def test_command_refuses_an_unknown_assignment(tmp_path, capsys):
    assert main(["grade", "gradescope", "99_nothing", "--out", str(tmp_path / "z.zip")]) == 2
    assert "no source notebook" in capsys.readouterr().err and not (tmp_path / "z.zip").exists()


# ---------------------------------------------------------------- slow: the class through run_autograder

def _env(root: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "LMCOURSE_AUTOGRADER_ROOT": str(root), "LMCOURSE_GS_VENV": str(VENV), **more}
    if not BWRAP:   # the zip's `auto` falls back to none by itself; said here so the test reads the same
        env["LMCOURSE_SANDBOX"] = "none"
    return env


def install_zip(tmp: Path, assignment: str) -> tuple[Path, subprocess.CompletedProcess]:
    """The assignment's zip (the shared LIMITS), unpacked as Gradescope does, its setup.sh run dry:
    the simulated /autograder root and setup.sh's run."""
    zip_path, root = tmp / "autograder.zip", tmp / "autograder"
    assert main(["grade", "gradescope", assignment, "--out", str(zip_path), *LIMITS]) == 0
    _unzip(zip_path, root)
    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=_env(root, LMCOURSE_GS_DRY_RUN="1"),
                           capture_output=True, text=True, timeout=600)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    return root, setup


class Graded:
    def __init__(self, root, setup_log, results, stdouts, rows):
        self.root, self.setup_log, self.results, self.stdouts, self.rows = root, setup_log, results, stdouts, rows


@pytest.fixture(scope="module")
def graded(tmp_path_factory, grader_batch) -> Graded:
    root, setup = install_zip(tmp_path_factory.mktemp("gradescope"), A)
    results, stdouts = {}, {}
    for student, nb in hostile_class().items():
        for sub in ("submission", "results"):       # a fresh container per submission
            if (root / sub).exists():
                for p in sorted((root / sub).rglob("*"), reverse=True):
                    p.rmdir() if p.is_dir() else p.unlink()
        where = root / "submission" / ("upload" if student == "flood" else "")   # a zip's folder, flattened
        where.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, where / f"{A}.ipynb")
        run = subprocess.run([str(root / "run_autograder")], cwd=root, env=_env(root), capture_output=True,
                             text=True, timeout=600)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        results[student] = json.loads((root / "results" / "results.json").read_text())
        stdouts[student] = run.stdout
    # the same submissions through `lmcourse grade`: the shared batch of 01 has each of them
    rows = {student: grader_batch.rows[student] for student in results}
    return Graded(root, setup.stdout, results, stdouts, rows)


TOP_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
            "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
             "visibility", "extra_data"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}


def check_format(doc: dict) -> None:
    """Gradescope's documented results.json: the keys it names, with their types and values."""
    assert set(doc) <= TOP_KEYS, set(doc) - TOP_KEYS
    assert isinstance(doc["score"], float) and isinstance(doc["output"], str)
    assert isinstance(doc["execution_time"], int) and isinstance(doc["extra_data"], dict)
    assert doc["output_format"] in FORMATS and doc["stdout_visibility"] in VISIBILITIES
    assert doc["tests"]
    for t in doc["tests"]:
        assert set(t) <= TEST_KEYS, set(t) - TEST_KEYS
        assert isinstance(t["name"], str) and t["name"] and isinstance(t["output"], str)
        assert isinstance(t["score"], float) and isinstance(t["max_score"], float) and 0 <= t["score"] <= t["max_score"]
        assert t["visibility"] in VISIBILITIES and t["status"] in ("passed", "failed")


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_setup_sh_dry_run_pins_cpu_torch_and_prepares_the_release(graded):
    log = graded.setup_log
    assert "(dry run, not run)" in log and "--index-url https://download.pytorch.org/whl/cpu" in log
    assert "constraints.txt" in log and "bubblewrap" in log
    assert (graded.root / OUT / "template" / "release" / A / f"{A}.ipynb").is_file()   # made once, at build
    assert "sandbox in this image:" in log


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
@pytest.mark.parametrize("student", HOSTILE)
def test_results_json_follows_the_format_and_says_what_grades_csv_says(graded, student):
    doc, row = graded.results[student], graded.rows[student]
    check_format(doc)
    scored = [t for t in doc["tests"] if t["max_score"] > 0]
    gids = [c.metadata["nbgrader"]["grade_id"] for c in SOURCE.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert [t["name"].split("(")[-1].rstrip(")") for t in scored] == gids        # one test per graded cell
    for t in scored:
        gid = t["name"].split("(")[-1].rstrip(")")
        assert t["score"] == float(row[gid]), (gid, t, row[gid])
    assert doc["score"] == float(row["score"]) == sum(t["score"] for t in scored)
    assert sum(t["max_score"] for t in scored) == float(row["auto_max"]) == AUTO_MAX
    ta = [t for t in doc["tests"] if t["visibility"] == "hidden" and t["name"].startswith("Grader report")]
    assert len(ta) == 1
    assert f"status: {row['status']}\n" in ta[0]["output"]
    for flag in filter(None, row["flags"].split(";")):
        assert flag in ta[0]["output"] and flag in doc["extra_data"]["flags"]
    assert doc["extra_data"]["status"] == row["status"]


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_the_hostile_cases_grade_as_lmcourse_grade_grades_them(graded):
    rows, res = graded.rows, graded.results
    assert rows["correct"]["status"] == "graded" and res["correct"]["score"] == AUTO_MAX
    assert res["blank"]["score"] == 0 and res["wrong"]["score"] == AUTO_MAX - 1
    assert 0 <= res["errors"]["score"] < AUTO_MAX
    assert res["loop"]["extra_data"]["status"] == "timeout" and "Not graded in full: timeout" in res["loop"]["output"]
    assert res["monkeypatch"]["score"] < AUTO_MAX       # patched comparisons in the kernel decide nothing
    assert res["flood"]["score"] == AUTO_MAX and all(len(t["output"]) < 6000 for t in res["flood"]["tests"])
    assert "sandbox:" in graded.stdouts["correct"] and "graded" in graded.stdouts["correct"]   # the TA's log


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_no_hidden_test_in_results_and_hidden_outcomes_wait(graded):
    hidden = hidden_lines(SOURCE)
    holders = {c.metadata["nbgrader"]["grade_id"] for c in SOURCE.cells if "BEGIN HIDDEN TESTS" in c.source}
    assert hidden and holders
    for student, doc in graded.results.items():
        text = json.dumps(doc)
        assert not [h for h in hidden if h in text or json.dumps(h)[1:-1] in text], student
        for t in doc["tests"]:
            gid = t["name"].split("(")[-1].split(")")[0]
            if t["max_score"] > 0:
                assert t["visibility"] == ("after_due_date" if gid in holders else "visible"), t
            elif not t["name"].startswith("Grader report"):    # the visible checks' verdict, at once
                assert t["visibility"] == "visible" and gid in holders and t["name"].endswith("visible checks")
    correct = {t["name"]: t for t in graded.results["correct"]["tests"]}
    assert all(t["status"] == "passed" for t in correct.values() if t["visibility"] != "hidden")
    assert "the visible checks pass" in correct["Exercise 1 tests (pad_sentence_tests): visible checks"]["output"]


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_run_autograder_without_a_notebook_still_writes_results(graded, tmp_path):
    root = graded.root
    for p in sorted((root / "submission").rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    (root / "submission" / "notes.txt").write_text("forgot the notebook")
    (root / "results" / "results.json").unlink()
    run = subprocess.run([str(root / "run_autograder")], cwd=root, env=_env(root), capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((root / "results" / "results.json").read_text())
    check_format(doc)
    assert doc["score"] == 0 and doc["extra_data"]["status"] == "missing-notebook"
    assert "missing-notebook" in doc["output"]
    assert stat.S_IMODE((root / "run_autograder").stat().st_mode) & 0o100


# ---------------------------------------------------------------- quick: the companion of a recorded cell

def _judged(tpl, answers: dict[str, dict]):
    """01's source notebook with every recorded test cell holding the record the autograded kernel
    would write for the reference's answers, with ``answers[exercise]`` in their place in that
    exercise's cell (the others run the reference, as stand-ins do), judged as `lmcourse
    grade` judges it (the records are made here, in-process: what the grader reads is the same)."""
    import copy

    from lmcourse.marking.grader import judge_notebook
    from lmcourse.marking.judge import observe
    from lmcourse.marking.kernel import MIME, hidden_cases
    from lmcourse.marking.notebooks import load
    from lmcourse.marking.spec import Names
    from lmcourse.reference import ngram

    spec = load(A)
    nb = copy.deepcopy(tpl.source)
    by_test = {ex.test_id: ex for ex in spec.exercises}
    for cell in nb.cells:
        ex = by_test.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if cell.cell_type != "code" or ex is None:
            continue
        ns = {**vars(ngram), **answers.get(ex.name, {})}
        trees = [observe(case.call, Names(ns)) for case in ex.cases + hidden_cases(spec, ex.name)]
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                               text=f"{ex.name}: recorded for the autograder with the hidden tests\n"),
                        nbformat.v4.new_output("display_data", data={MIME: {"notebook": A, "exercise": ex.name,
                                                                            "cases": trees}})]
    judge_notebook(nb, A)
    return nb


@pytest.mark.parametrize("visibility", ["after_due_date", "hidden"])
def test_the_visible_companion_says_nothing_of_the_hidden_cases(tmp_path, visibility):
    """Right on the visible cases, wrong on a hidden one (pad_sentence([], 5)), and a wrong quiz
    letter (its visible case checks the form only): the companion, visible at once, says the
    visible checks pass, as the student's notebook does; the hidden message is in the scored test
    only, under the chosen visibility."""
    from nbgrader.utils import determine_grade

    from lmcourse.grading.gradescope import results_json
    from lmcourse.grading.result import Result
    from lmcourse.grading.template import Template
    from lmcourse.reference import ngram

    def pad_sentence(words, n):          # forgets the start tokens of an empty sentence
        return [ngram.BOS] * (n - 1) + list(words) + [ngram.EOS] if words else [ngram.EOS]

    wrong = next(x for x in "ABCD" if x != ngram.answer_q1)
    tpl = Template(A, tmp_path)
    nb = _judged(tpl, {"pad_sentence": {"pad_sentence": pad_sentence}, "q1": {"answer_q1": wrong}})
    scores = {c.metadata["nbgrader"]["grade_id"]: float(determine_grade(c)[0] or 0) for c in nb.cells
              if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}
    res = Result("s", A, "graded", score=sum(scores.values()), max_score=tpl.max_score,
                 auto_max=sum(p for _, k, p in tpl.grade_cells if k == "code"), tests=scores)
    tests = {t["name"]: t for t in results_json(res, tpl, nb, visibility)["tests"]}
    for gid, hidden_msg in (("pad_sentence_tests", "pad_sentence([], 5)"), ("q1_tests", "is not the right choice")):
        scored = next(t for n, t in tests.items() if n.endswith(f"({gid})"))
        companion = next(t for n, t in tests.items() if n.endswith(f"({gid}): visible checks"))
        assert scored["status"] == "failed" and scored["visibility"] == visibility
        assert hidden_msg in scored["output"] and "a hidden test failed" in scored["output"]
        assert companion["visibility"] == "visible" and companion["status"] == "passed", companion
        assert "the visible checks pass" in companion["output"]
        assert "hidden test failed" not in companion["output"] and hidden_msg not in companion["output"]
    # every other exercise right: its companion passes too
    assert all(t["status"] == "passed" for n, t in tests.items() if n.endswith("visible checks")
               and "pad_sentence_tests" not in n and "(q1_tests)" not in n)


def test_the_visible_companion_shows_a_visible_cases_own_message(tmp_path):
    from lmcourse.grading.gradescope import results_json
    from lmcourse.grading.result import Result
    from lmcourse.grading.template import Template
    from lmcourse.reference import ngram

    tpl = Template(A, tmp_path)
    nb = _judged(tpl, {"pad_sentence": {"pad_sentence": lambda words, n: list(words) + [ngram.EOS]}})
    res = Result("s", A, "graded", tests={"pad_sentence_tests": 0.0})
    companion = next(t for t in results_json(res, tpl, nb)["tests"]
                     if t["name"].endswith("(pad_sentence_tests): visible checks"))
    assert companion["status"] == "failed" and companion["visibility"] == "visible"
    assert "a visible test failed: pad_sentence(['cows', 'eat', 'grass'], 3)" in companion["output"]
    assert "shown after the due date" in companion["output"]
