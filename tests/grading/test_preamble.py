"""The preamble (lmcourse/grading/preamble.py): the cell `repair_submission` puts first, and what
it does in a kernel before any student code. The confinement it arms is an audit hook, which
cannot be removed, so the kernel here is an IPython shell in a subprocess of its own."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys

import pytest

from lmcourse.grading import preamble


def test_source_is_one_call_with_literal_values():
    src = preamble.source(7, 1000, heavy=False, assignment="01_ngram")
    tree = ast.parse(src)
    assert src.startswith(preamble.HEADER)
    assert len(tree.body) == 1 and isinstance(tree.body[0].value, ast.Call)   # one expression
    call = tree.body[0].value
    assert [ast.literal_eval(a) for a in call.args] == [7, 1000, False, "01_ngram"]
    assert not any(isinstance(n, (ast.Assign, ast.Import, ast.ImportFrom, ast.FunctionDef))
                   for n in ast.walk(tree))       # binds no name in the student's namespace


def test_source_coerces_and_refuses_what_is_not_a_value():
    assert preamble.source("3", 10.0, 1) == preamble.source(3, 10, True)
    for name in ("01'); import os; ('", "a b", 5):
        with pytest.raises(ValueError, match="not an assignment name"):
            preamble.source(3, 10, True, name)
    with pytest.raises(ValueError):
        preamble.source("0; import os", 10)


def test_only_a_notebook_whose_code_names_torch_gets_torch_seeded():
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
from lmcourse.grading import preamble

ip = InteractiveShell.instance()
before = set(ip.user_ns)
out = {"error": repr(ip.run_cell(preamble.source(7, 200, heavy=False, assignment="01_ngram")).error_in_exec)}
out["new_names"] = sorted(set(ip.user_ns) - before - {"_", "__", "___"})
ip.run_cell("import random\nx = random.random()")
out["random"] = ip.user_ns["x"]
out["reference"] = repr(ip.run_cell("import lmcourse.reference.ngram").error_in_exec)
out["process"] = repr(ip.run_cell("import subprocess\nsubprocess.run(['true'])").error_in_exec)
ip.run_cell("print('y' * 500)")                                # past the output cap
sys.__stderr__.write(json.dumps(out))
'''


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    proc = subprocess.run([sys.executable, "-c", KERNEL], cwd=tmp_path_factory.mktemp("kernel"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, json.loads(proc.stderr.strip().splitlines()[-1])


def test_run_binds_nothing(kernel):
    stdout, out = kernel
    assert out["error"] == "None" and out["new_names"] == []


def test_run_seeds_and_caps_the_output(kernel):
    stdout, out = kernel
    assert out["random"] == random.Random(7).random()
    assert "[output cut: the grader's output cap]" in stdout and "y" * 200 not in stdout


def test_run_withholds_the_reference_and_confines_processes(kernel):
    _, out = kernel
    assert "not available while notebook 01_ngram is graded" in out["reference"], out["reference"]
    assert "Confined" in out["process"], out["process"]
