"""Throughput of `lmcourse grade -j J` against plain serial `nbgrader autograde`.

    .venv/bin/python bench/bench_grade.py [N] [J]

N submissions of notebook 01 (half correct, half with a wrong answer) are graded twice:
1. plain nbgrader: one temporary course, `nbgrader autograde 01_ngram` (serial, no feedback);
2. `lmcourse grade 01_ngram -j J --force` (sandbox, checks, limits, feedback and
   the gradebook writes included; the sandbox in force is printed).
Both start from the same state, untimed: the assignment generated once (nbgrader's
`generate_assignment` for 1; for 2 the same command, which `lmcourse grade` caches per `--out`)
and the gradebook created with the assignment in it; the Python packages both load (torch,
nbclient, nbconvert, nbgrader) read once so that neither pays a cold disk cache.
Prints submissions per minute for each, the ratio, the load average before each run and
`lmcourse grade --timings` (where its time went). Timings only: nothing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from lmcourse.authoring.course import TempCourse, perfect_submission
from lmcourse.grading.nbgrader_cli import put_bin_on_path
from lmcourse.grading.template import Template

ROOT = Path(__file__).resolve().parents[1]

A = "01_ngram"


def submissions(n: int) -> list[tuple[str, nbformat.NotebookNode]]:
    student = nbformat.read(ROOT / "notebooks" / f"{A}.ipynb", as_version=4)
    source = nbformat.read(ROOT / "autograder" / "source" / A / f"{A}.ipynb", as_version=4)
    out = []
    for i in range(n):
        nb = perfect_submission(student, source)
        if i % 2:
            for c in nb.cells:
                if c.metadata.get("nbgrader", {}).get("grade_id") == "q1":
                    c.source = "answer_q1 = 'A'\n"
        out.append((f"s{i:03d}", nb))
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    jobs = sys.argv[2] if len(sys.argv) > 2 else "2"
    subs = submissions(n)
    subprocess.run([sys.executable, "-c", "import torch, nbclient, nbconvert, nbgrader"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        course = TempCourse(tmp / "plain", [A])          # generate_assignment: not timed
        for sid, nb in subs:
            course.submit(sid, A, nb)
        load_plain = os.getloadavg()[0]
        t0 = time.perf_counter()
        course.autograde(A)
        plain = time.perf_counter() - t0

        folder = tmp / "class"
        for sid, nb in subs:
            (folder / sid).mkdir(parents=True)
            nbformat.write(nb, folder / sid / f"{A}.ipynb")
        # the same starting state as plain nbgrader's: assignment generated, gradebook created
        Template(A, tmp / "out")                         # generate_assignment: not timed
        from nbgrader.api import Gradebook

        put_bin_on_path()
        (tmp / "course").mkdir()
        with Gradebook(f"sqlite:///{tmp / 'course' / 'gradebook.db'}") as gb:   # (runs alembic)
            gb.update_or_create_assignment(A)
        load_ours = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "lmcourse.commands.main", "grade", A, str(folder), "--out",
                               str(tmp / "out"), "-j", jobs, "--force", "--no-progress", "--timings",
                               "--gradebook", str(tmp / "course" / "gradebook.db")], check=True,
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # includes the feedback pages and the gradebook writes
        ours = time.perf_counter() - t0
    lines = proc.stderr.splitlines()
    sandbox_line = next((ln for ln in lines if ln.startswith("sandbox:")), "?")
    table = lines[next((i for i, ln in enumerate(lines) if ln.startswith("timings")), len(lines)):]
    print(f"{n} submissions of {A}; {os.cpu_count()} cores")
    print(f"  nbgrader autograde (serial):  {plain:7.1f} s  {60 * n / plain:6.1f} submissions/min"
          f"  (load average before: {load_plain:.2f})")
    print(f"  lmcourse grade -j {jobs}:         {ours:7.1f} s  {60 * n / ours:6.1f} submissions/min"
          f"  (load average before: {load_ours:.2f})")
    print(f"  ratio: {plain / ours:.2f}x")
    print(f"  {sandbox_line}")
    print("\n".join(table))


if __name__ == "__main__":
    main()
