"""Gradescope and sharded grading end to end on a second notebook, 03_attention (01_ngram is
the other: tests/grading/test_gradescope.py and test_shard.py exercise 01_ngram).

03 is torch, and its test cells run the graded calls under ``lmcourse.marking.confine``: what 01 cannot
show. One small hostile class (the solution, the untouched release, the first catalogued mutant,
a student who patches a check helper) is graded three ways, at the shared batch's limits:
once by ``lmcourse grade``; as three shards, separate processes with a Slurm array's variables
and ``--shard auto``, then ``lmcourse grade merge``; and through the Gradescope zip
(``setup.sh`` dry run, ``run_autograder`` once per student). The merge must write the single
run's bytes, and each results.json must say what the single run's grades.csv row says.

Kept small: four students, twelve kernel runs in all; the student names are chosen
so that every shard grades someone (``share_of``: correct 3, unanswered and tamper 1, mutated 2).
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest

from lmcourse.authoring.course import perfect_submission
from lmcourse.authoring.mutants import load_mutants, variants_path
from lmcourse.commands.main import main
from lmcourse.grading.shard import share_of
from tests.conftest import ROOT
from tests.grading.conftest import LIMITS, hidden_lines
from tests.grading.test_grade import SANDBOX
from tests.grading.test_gradescope import _env, check_format, install_zip
from tests.grading.test_shard import _as_run, assert_results_match_but_for_timings, grade_shards_as_a_slurm_array

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("second-notebook")]

A = "03_attention"
SOURCE = nbformat.read(ROOT / "autograder" / "source" / A / f"{A}.ipynb", as_version=4)
RELEASE = nbformat.read(ROOT / "notebooks" / f"{A}.ipynb", as_version=4)
GRADED = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in SOURCE.cells
          if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}   # autograded cells, in order
AUTO_MAX = sum(GRADED.values())
SHARDS = 3
# the tampering answer: a wrong softmax (it overflows) and the closeness check made to pass anything,
# in the module and under the name the test cells call; the grader judges the records in its own
# process, so the patch changes nothing and the wrong softmax costs its test
TAMPER = ("import lmcourse.checks\n"
          "lmcourse.checks.check_tensor_close = lambda *a, **k: None\n"
          "check_tensor_close = lmcourse.checks.check_tensor_close\n\n"
          "def softmax(x, dim=-1):\n"
          "    e = x.exp()\n"
          "    return e / e.sum(dim=dim, keepdim=True)\n")


def _answer(nb: nbformat.NotebookNode, grade_id: str, source: str) -> nbformat.NotebookNode:
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    assert cell.metadata["nbgrader"].get("solution"), grade_id
    cell.source = source
    return nb


class Graded(NamedTuple):
    rows: dict[str, dict[str, str]]    # student -> its row of the single run's grades.csv
    single: Path                       # the single run's --out
    merged: Path                       # the merge's --out
    shards: list[Path]                 # each shard's --out, shard 1 first
    results: dict[str, dict]           # student -> its results.json from run_autograder
    mutant: object                     # the catalogue's first mutant (lmcourse.authoring.mutants.Variant)


def _through_gradescope(tmp: Path, students: dict[str, nbformat.NotebookNode]) -> dict[str, dict]:
    root, _ = install_zip(tmp, A)
    results = {}
    for student, nb in students.items():
        for sub in ("submission", "results"):       # a fresh container per submission
            if (root / sub).exists():
                for p in sorted((root / sub).rglob("*"), reverse=True):
                    p.rmdir() if p.is_dir() else p.unlink()
        (root / "submission").mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, root / "submission" / f"{A}.ipynb")
        run = subprocess.run([str(root / "run_autograder")], cwd=root, env=_env(root), capture_output=True,
                             text=True, timeout=600)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        results[student] = json.loads((root / "results" / "results.json").read_text())
    return results


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    tmp = tmp_path_factory.mktemp("second-notebook")
    mutant = load_mutants(variants_path(ROOT, A))[0]   # patches made into cell text
    students = {"correct": perfect_submission(RELEASE, SOURCE),
                "unanswered": RELEASE,                                      # the release, untouched
                "mutated": _answer(perfect_submission(RELEASE, SOURCE), mutant.target, mutant.source),
                "tamper": _answer(perfect_submission(RELEASE, SOURCE), "softmax", TAMPER)}
    subs = tmp / "class"
    for student, nb in students.items():
        (subs / "submitted" / student / A).mkdir(parents=True)
        nbformat.write(nb, subs / "submitted" / student / A / f"{A}.ipynb")
    single, merged = tmp / "single", tmp / "merged"
    assert main(["grade", A, str(subs), "--out", str(single), "-j", "2", *LIMITS, "--no-progress",
                 "--gradebook", "none", *SANDBOX]) == 0
    rows = {r["student"]: r for r in csv.DictReader((single / "grades.csv").read_text().splitlines())}
    shards = grade_shards_as_a_slurm_array(subs, tmp, SHARDS, A, (*LIMITS, "--no-progress", *SANDBOX))
    assert main(["grade", "merge", *map(str, shards), "--out", str(merged), "--gradebook", "none"]) == 0
    return Graded(rows, single, merged, shards, _through_gradescope(tmp, students), mutant)


# ---------------------------------------------------------------- the class, as `lmcourse grade` grades it

def test_the_hostile_cases(graded):
    rows, mutant = graded.rows, graded.mutant
    assert set(rows) == {"correct", "unanswered", "mutated", "tamper"}
    assert all(r["status"] == "graded" and float(r["auto_max"]) == AUTO_MAX for r in rows.values()), rows
    correct = rows["correct"]
    assert float(correct["score"]) == AUTO_MAX and correct["flags"] == "", correct
    assert all(float(correct[g]) == p for g, p in GRADED.items()), correct
    assert float(rows["unanswered"]["score"]) == 0 and rows["unanswered"]["flags"] == "", rows["unanswered"]
    # the mutant costs its own test cell's points and no others (as the grading proofs require)
    lost = {g for g, p in GRADED.items() if float(rows["mutated"][g]) != p}
    assert lost == {f"{mutant.target}_tests"} and float(rows["mutated"][f"{mutant.target}_tests"]) == 0, rows["mutated"]
    assert rows["mutated"]["flags"] == ""
    # the patched check would have passed the overflowing softmax in the kernel: it decides nothing now
    tamper = rows["tamper"]
    assert float(tamper["softmax_tests"]) == 0 and float(tamper["score"]) <= AUTO_MAX - GRADED["softmax_tests"]


# ---------------------------------------------------------------- three shards = one run

def test_each_shard_graded_its_own_share(graded):
    seen = []
    for k, out in enumerate(graded.shards, 1):
        rec = json.loads((out / "shard.json").read_text())
        assert rec["shard"] == k and rec["count"] == SHARDS and sorted(rec["class"]) == sorted(graded.rows)
        assert rec["students"] and all(share_of(s, SHARDS) == k for s in rec["students"])   # none idle
        assert sorted(p.stem for p in (out / "results").glob("*.json")) == sorted(rec["students"])
        seen += rec["students"]
    assert sorted(seen) == sorted(graded.rows)


def test_merge_writes_the_bytes_one_run_writes(graded):
    s, m = graded.single, graded.merged
    assert (m / "grades.csv").read_bytes() == (s / "grades.csv").read_bytes()
    assert (m / "students.json").read_bytes() == (s / "students.json").read_bytes()
    assert json.loads((m / "run.json").read_text()) == json.loads((s / "run.json").read_text())  # no gradebook: ""
    assert sorted(p.name for p in (m / "feedback").glob("*.html")) == \
        sorted(p.name for p in (s / "feedback").glob("*.html")) == [f"{x}.html" for x in sorted(graded.rows)]
    # 03 prints wall-clock timings in one cell (the attention cost demo), so pages differ between any two
    # runs: the merged page must be its shard's, and every other cell as the single run's
    by_shard = {p.name: p for out in graded.shards for p in (out / "feedback").glob("*.html")}
    for x in sorted(graded.rows):
        assert (m / "feedback" / f"{x}.html").read_bytes() == by_shard[f"{x}.html"].read_bytes(), x
        one, joined = (_as_run(d / "autograded" / f"{x}.ipynb") for d in (s, m))
        assert joined.metadata == one.metadata and len(joined.cells) == len(one.cells), x
        clocked = [a for a in one.cells if "time.perf_counter" in a.source]
        assert len(clocked) == 1, x                       # the demo: if it moves, say so here
        for a, b in zip(one.cells, joined.cells):   # (nbclient's timestamps, output chunks aside: test_shard.py)
            assert b == a or a is clocked[0], (x, a.get("id"), a.source[:200])
    assert_results_match_but_for_timings(s, m)


# ---------------------------------------------------------------- the Gradescope zip

@pytest.mark.parametrize("student", ["correct", "unanswered", "mutated", "tamper"])
def test_results_json_follows_the_format_and_says_what_grades_csv_says(graded, student):
    doc, row = graded.results[student], graded.rows[student]
    check_format(doc)
    scored = [t for t in doc["tests"] if t["max_score"] > 0]
    assert [t["name"].split("(")[-1].rstrip(")") for t in scored] == list(GRADED)   # one test per graded cell
    for t in scored:
        gid = t["name"].split("(")[-1].rstrip(")")
        assert t["max_score"] == GRADED[gid] and t["score"] == float(row[gid]), (gid, t, row[gid])
    assert doc["score"] == float(row["score"]) == sum(t["score"] for t in scored)
    assert sum(t["max_score"] for t in scored) == float(row["auto_max"]) == AUTO_MAX
    (ta,) = [t for t in doc["tests"] if t["visibility"] == "hidden" and t["name"].startswith("Grader report")]
    assert f"status: {row['status']}\n" in ta["output"] and doc["extra_data"]["status"] == row["status"]
    flags = list(filter(None, row["flags"].split(";")))
    assert doc["extra_data"]["flags"] == flags and f"flags: {', '.join(flags) or '-'}\n" in ta["output"]


def test_results_json_quotes_no_hidden_test(graded):
    hidden = hidden_lines(SOURCE)
    assert hidden, "notebook 03 is expected to have hidden tests"
    for student, doc in graded.results.items():
        text = json.dumps(doc)
        assert not [h for h in hidden if h in text or json.dumps(h)[1:-1] in text], student
