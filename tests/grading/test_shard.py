"""`lmcourse grade --shard K/N` and `lmcourse grade merge`: the class split by a hash of the
student id, each share graded alone, the shares joined into what one run writes.

The slow test is a local stand-in for a Slurm job array: three shards run as separate processes
at once, each with the array's environment (``SLURM_ARRAY_TASK_ID`` and friends) and
``--shard auto``, then the merge; compared with one run of the whole class over the same
submissions (a few of notebook 01, three of which run a kernel)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from lmcourse.commands.main import main
from lmcourse.grading.ingest import Submission
from lmcourse.grading.shard import ShardError, merge, parse, share_of, take_share
from tests.conftest import ROOT
from tests.grading.test_grade import SANDBOX, A, write_batch

# the students of the batch: one shard gets only a file that runs no kernel (invalid_json), one
# a kernel run and three that run none, one two kernel runs (share_of(student, 3) says which)
CLASS = {"correct", "wrong", "errors", "invalid_json", "missing", "empty", "wrong_assignment"}
# generous caps: no student here loops, and a cell cut short by a loaded machine would differ between runs
LIMITS = ["--notebook-timeout", "400", "--cell-timeout", "120", "--memory-mb", "3072", "--processes", "256",
          "--no-progress", *SANDBOX]


# ---------------------------------------------------------------- quick: the share and the flag

def test_share_depends_on_the_id_alone():
    ids = [f"s{i:04d}" for i in range(300)]
    shares = {i: share_of(i, 8) for i in ids}
    assert shares == {i: share_of(i, 8) for i in reversed(ids)}      # order of the folder: no effect
    assert set(shares.values()) == set(range(1, 9))
    assert all(15 <= list(shares.values()).count(k) <= 60 for k in range(1, 9)), shares   # roughly even
    # a process with another PYTHONHASHSEED puts every student in the same share
    code = "from lmcourse.grading.shard import share_of; print([share_of(f's{i:04d}', 8) for i in range(300)])"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "123"}).stdout
    assert json.loads(other) == [shares[i] for i in ids]


def test_take_share_partitions_the_class_and_records_it(tmp_path):
    subs = [Submission(f"s{i}", None) for i in range(20)]
    got = [take_share(subs, (k, 3), tmp_path / str(k)) for k in (1, 2, 3)]
    assert sorted(s.student for part in got for s in part) == sorted(s.student for s in subs)
    rec = json.loads((tmp_path / "2" / "shard.json").read_text())
    assert rec["shard"] == 2 and rec["count"] == 3 and rec["class"] == [s.student for s in subs]
    assert rec["students"] == [s.student for s in got[1]]


@pytest.mark.parametrize("text, env, want", [
    ("2/8", {}, (2, 8)),
    ("auto", {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"}, (3, 4)),
    ("auto", {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"}, (1, 4)),
    ("auto/4", {"JOB_COMPLETION_INDEX": "3"}, (4, 4)),
    ("auto/4", {"JOB_COMPLETION_INDEX": "0"}, (1, 4)),
])
def test_parse(text, env, want):
    assert parse(text, env) == want


@pytest.mark.parametrize("text, env, says", [
    ("0/3", {}, "numbered 1 to N"),
    ("4/3", {}, "numbered 1 to N"),
    ("2", {}, "how many shards"),
    ("two/3", {}, "write K/N"),
    ("auto", {}, "write K/N"),
    ("auto", {"JOB_COMPLETION_INDEX": "1"}, "write auto/N"),
    ("auto/2", {"JOB_COMPLETION_INDEX": "2"}, "shard 3 of 2"),
])
def test_parse_refuses_with_a_reason(text, env, says):
    with pytest.raises(ShardError, match=says):
        parse(text, env)


def test_merge_refuses_a_missing_or_doubled_shard(tmp_path):
    def shard(k: int, n: int = 3) -> Path:
        f = tmp_path / f"s{k}"
        f.mkdir(exist_ok=True)
        (f / "shard.json").write_text(json.dumps({"shard": k, "count": n, "class": ["a", "b"], "students": []}))
        (f / "run.json").write_text(json.dumps({"assignment": A, "gradebook": ""}))
        (f / "grades.csv").write_text("student\n")
        return f

    with pytest.raises(ShardError, match="shard\\(s\\) 3/3 missing"):
        merge([shard(1), shard(2)], tmp_path / "out", None)
    with pytest.raises(ShardError, match="given twice"):
        merge([shard(1), shard(2), shard(2), shard(3)], tmp_path / "out", None)
    with pytest.raises(ShardError, match="not a finished shard"):
        merge([shard(1), tmp_path], tmp_path / "out", None)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("mine")
    with pytest.raises(ShardError, match="not empty"):
        merge([shard(1), shard(2), shard(3)], tmp_path / "busy", None)
    assert (tmp_path / "busy" / "x").read_text() == "mine"


def test_shard_and_student_do_not_mix(tmp_path, capsys):
    assert main(["grade", A, str(tmp_path), "--out", str(tmp_path / "o"), "--shard", "1/2", "--student", "x",
                 *SANDBOX]) == 2
    assert "not with --shard" in capsys.readouterr().err


# ---------------------------------------------------------------- slow: three shards = one run

def grade_shards_as_a_slurm_array(subs: Path, tmp: Path, n: int, assignment: str = A,
                                  flags: tuple[str, ...] = tuple(LIMITS)) -> list[Path]:
    """The stand-in for `sbatch --array=1-N`: N processes at once, each with its task's variables
    (tests/grading/test_second_notebook.py runs it for 03)."""
    procs, outs = [], []
    for task in range(1, n + 1):
        out = tmp / f"shard_{task}"
        env = {**os.environ, "SLURM_ARRAY_JOB_ID": "4242", "SLURM_ARRAY_TASK_ID": str(task),
               "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": str(n), "SLURM_ARRAY_TASK_COUNT": str(n)}
        procs.append(subprocess.Popen([sys.executable, "-m", "lmcourse.commands.main", "grade", assignment, str(subs),
                                       "--out", str(out), "--shard", "auto", "-j", "1", *flags], env=env, cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outs.append(out)
    for task, p in enumerate(procs, 1):
        text, _ = p.communicate(timeout=900)
        assert p.returncode == 0, f"shard {task}:\n{text[-3000:]}"
        assert f"shard {task}/{n}" in text, text[-3000:]
    return outs


def assert_results_match_but_for_timings(single: Path, merged: Path) -> None:
    """Every results/*.json of the merged run equals the single run's, but for how long it took."""
    for p in sorted((single / "results").glob("*.json")):
        one, joined = json.loads(p.read_text()), json.loads((merged / "results" / p.name).read_text())
        for d in (one, joined):
            for k in ("seconds", "timings"):       # how long it took, on which machine
                d.pop(k)
        assert joined == one, p.name


class Runs:
    def __init__(self, single: Path, merged: Path, shards: list[Path], db_single: Path, db_merged: Path):
        self.single, self.merged, self.shards = single, merged, shards
        self.db_single, self.db_merged = db_single, db_merged


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    tmp = tmp_path_factory.mktemp("shards")
    subs = write_batch(tmp / "class", only=CLASS)
    single, merged = tmp / "single", tmp / "merged"
    db_single, db_merged = tmp / "gb_single" / "gradebook.db", tmp / "gb_merged" / "gradebook.db"
    assert main(["grade", A, str(subs), "--out", str(single), "-j", "2", "--gradebook", str(db_single),
                 *LIMITS]) == 0
    shards = grade_shards_as_a_slurm_array(subs, tmp, 3)
    assert main(["grade", "merge", *map(str, shards), "--out", str(merged), "--gradebook", str(db_merged)]) == 0
    return Runs(single, merged, shards, db_single, db_merged)



@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_each_student_graded_once_by_its_own_shard(runs):
    seen = []
    for k, out in enumerate(runs.shards, 1):
        rec = json.loads((out / "shard.json").read_text())
        assert rec["shard"] == k and rec["count"] == 3 and sorted(rec["class"]) == sorted(CLASS)
        assert all(share_of(s, 3) == k for s in rec["students"])
        assert sorted(p.stem for p in (out / "results").glob("*.json")) == sorted(rec["students"])
        seen += rec["students"]
    assert sorted(seen) == sorted(CLASS)


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_merge_writes_the_bytes_one_run_writes(runs):
    """grades.csv and students.json byte for byte; run.json but for the gradebook's path (each
    run names its own)."""
    s, m = runs.single, runs.merged
    assert (m / "grades.csv").read_bytes() == (s / "grades.csv").read_bytes()
    assert (m / "students.json").read_bytes() == (s / "students.json").read_bytes()
    run_s, run_m = (json.loads((d / "run.json").read_text()) for d in (s, m))
    assert run_s.pop("gradebook") == str(runs.db_single) and run_m.pop("gradebook") == str(runs.db_merged)
    assert run_s == run_m


def _page_text(page: Path) -> str:
    """A feedback page's text: its tags and white space aside. A cell's printed output reaches
    the grader in as many chunks as the kernel happened to flush, and each chunk is its own
    block in the page's HTML; what the student reads is the same."""
    return " ".join(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")).split())


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_merged_feedback_pages_are_the_shards_and_read_as_one_runs(runs):
    s, m = runs.single, runs.merged
    pages = sorted(p.name for p in (s / "feedback").glob("*.html"))
    assert {"correct.html", "wrong.html", "errors.html", "wrong_assignment.html"} <= set(pages)
    assert pages == sorted(p.name for p in (m / "feedback").glob("*.html"))
    by_shard = {p.name: p for out in runs.shards for p in (out / "feedback").glob("*.html")}
    for name in pages:
        assert (m / "feedback" / name).read_bytes() == by_shard[name].read_bytes(), name
        assert _page_text(m / "feedback" / name) == _page_text(s / "feedback" / name), name


def _as_run(nb_path: Path) -> dict:
    """The autograded notebook without when it ran (nbclient's timestamps) and with each
    cell's printed output in one piece (the chunks: see _page_text)."""
    nb = nbformat.read(nb_path, as_version=4)
    for c in nb.cells:
        c.metadata.pop("execution", None)
        joined = []
        for o in c.get("outputs", []):
            if joined and o.output_type == "stream" == joined[-1].output_type and o.name == joined[-1].name:
                joined[-1].text += o.text
            else:
                joined.append(o)
        if c.cell_type == "code":
            c.outputs = joined
    return nb


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_merged_results_and_autograded_notebooks_match_but_for_timings(runs):
    s, m = runs.single, runs.merged
    names = sorted(p.name for p in (s / "autograded").glob("*.ipynb"))
    assert {"correct.ipynb", "wrong.ipynb", "errors.ipynb"} <= set(names)
    assert names == sorted(p.name for p in (m / "autograded").glob("*.ipynb"))
    for name in names:
        one, joined = _as_run(s / "autograded" / name), _as_run(m / "autograded" / name)
        assert joined.metadata == one.metadata and len(joined.cells) == len(one.cells), name
        for a, b in zip(one.cells, joined.cells):
            assert b == a, (name, a.get("id"), a.source[:200])
    assert_results_match_but_for_timings(s, m)


@pytest.mark.slow
@pytest.mark.xdist_group("grader-batches")
def test_merged_gradebook_holds_what_one_run_writes(runs):
    from nbgrader.api import Gradebook

    def scores(db: Path) -> dict:
        with Gradebook(f"sqlite:///{db}") as gb:
            return {(st.id, g.name): (g.auto_score, g.max_score)
                    for st in gb.students for g in gb.find_submission_notebook(A, A, st.id).grades}

    one = scores(runs.db_single)
    assert one and one == scores(runs.db_merged)
    assert one[("correct", "q1_tests")][0] == 1 and one[("wrong", "q1_tests")][0] == 0
