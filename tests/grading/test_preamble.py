"""The preamble (lmcourse/grading/preamble.py): the cell `prepare` puts first, and what it does
in a kernel before any student code. The guard's audit hook it arms cannot be removed, so the
kernel here is an IPython shell in a subprocess of its own."""

from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys

import pytest

from lmcourse.grading import preamble
from lmcourse.grading.guard import MARKER, verify_log


def test_source_is_one_call_with_literal_values():
    src = preamble.source(7, 1000, "abc123", heavy=False, assignment="01_ngram")
    tree = ast.parse(src)
    assert src.startswith(preamble.HEADER)
    assert len(tree.body) == 1 and isinstance(tree.body[0].value, ast.Call)   # one expression
    call = tree.body[0].value
    assert [ast.literal_eval(a) for a in call.args] == [7, 1000, "abc123", False, "01_ngram"]
    assert not any(isinstance(n, (ast.Assign, ast.Import, ast.ImportFrom, ast.FunctionDef))
                   for n in ast.walk(tree))       # binds no name in the student's namespace


def test_source_coerces_and_refuses_what_is_not_a_value():
    assert preamble.source("3", 10.0, "ff", 1) == preamble.source(3, 10, "ff", True)
    with pytest.raises(ValueError, match="not an assignment name"):
        preamble.source(3, 10, "ff", True, "01'); import os; ('")
    for nonce in ("a'); import os; ('", "", "a b", 5):
        with pytest.raises(ValueError):
            preamble.source(0, 10, nonce)
    with pytest.raises(ValueError):
        preamble.source("0; import os", 10, "ff")


def test_only_a_notebook_whose_code_names_torch_gets_the_torch_surface():
    """01's kernels never import torch (seconds on each of its submissions, the most graded): the
    decision reads the notebook's code cells but the Colab set-up cell, which names torch in every
    notebook to install it where it is missing (it made 01 import torch under the grader)."""
    import nbformat

    from lmcourse.grading.prepare import uses_torch
    from tests.conftest import NOTEBOOKS, ROOT

    light = [n for n in NOTEBOOKS if not uses_torch(nbformat.read(ROOT / "notebooks" / f"{n}.ipynb", as_version=4))]
    assert light == ["01_ngram"]
    release = nbformat.read(ROOT / "notebooks" / "01_ngram.ipynb", as_version=4)
    (bootstrap,) = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "bootstrap"]
    assert "torch" in bootstrap.source


KERNEL = r'''
import json, sys
from IPython.core.interactiveshell import InteractiveShell
from lmcourse.grading import guard, preamble

ip = InteractiveShell.instance()
before = set(ip.user_ns)
out = {"error": repr(ip.run_cell(preamble.source(7, 200, "abc123", heavy=False)).error_in_exec)}
out["new_names"] = sorted(set(ip.user_ns) - before - {"_", "__", "___"})
ip.run_cell("import random\nx = random.random()")
out["random"] = ip.user_ns["x"]
ip.run_cell(guard.guard_source("abc123", "before", "t1"))      # nothing changed yet
ip.run_cell("import math\nmath.sqrt = lambda v: 0")          # student code rebinds a helper
ip.run_cell(guard.guard_source("abc123", "after", "t1"))
ip.run_cell("print('y' * 500)")                                # past the output cap
out["log"] = open(guard.LOG_NAME).read()
sys.__stderr__.write(json.dumps(out))
'''


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    proc = subprocess.run([sys.executable, "-c", KERNEL], cwd=tmp_path_factory.mktemp("kernel"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, json.loads(proc.stderr.strip().splitlines()[-1])


def test_run_prints_the_key_once_and_binds_nothing(kernel):
    stdout, out = kernel
    assert out["error"] == "None" and out["new_names"] == []
    keys = re.findall(re.escape(MARKER) + r" key ([0-9a-f]{64})", stdout)
    assert len(keys) == 1, stdout[:500]


def test_run_seeds_and_caps_the_output(kernel):
    stdout, out = kernel
    assert out["random"] == random.Random(7).random()
    assert "[output cut: the grader's output cap]" in stdout and "y" * 200 not in stdout


def test_the_printed_key_signs_the_guard_reports_and_the_snapshot_predates_student_code(kernel):
    stdout, out = kernel
    key = re.search(re.escape(MARKER) + r" key ([0-9a-f]{64})", stdout).group(1)
    reports, forged = verify_log(key, out["log"], [("before", "t1"), ("after", "t1")])
    assert not forged
    assert reports[("before", "t1")]["state"] == []
    assert "math.sqrt" in reports[("after", "t1")]["state"]
    assert verify_log("0" * 64, out["log"], [("before", "t1"), ("after", "t1")])[1]   # another key: forged
