"""A cell that uses an exercise's name before its cell ran says which exercise to run first
(``lmcourse.setup`` in a student's JupyterLab); never under nbgrader."""

import json
import re
import tempfile

import nbformat
import pytest
from nbclient import NotebookClient

from lmcourse import runtime
from lmcourse.notebook_runner import ipc_kernel_config

from tests.conftest import NOTEBOOKS, ROOT


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_stubbed_name_maps_to_the_exercise_its_stub_names(name):
    path = ROOT / "notebooks" / f"{name}.ipynb"
    names = runtime.exercise_names(path)
    text = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    stubs = re.findall(r'NotImplementedError\("Exercise (\d+): write (\w+)', text)
    assert stubs
    for number, what in stubs:
        assert re.match(rf"Exercise {number}\b", names[what]), (what, names[what])
    for answer in re.findall(r'NotImplementedError\("set (answer_\w+) to', text):
        assert "answer cell" in names[answer]


def _run(tmp_path, monkeypatch, cells, **env):
    nb_path = tmp_path / "01_ngram.ipynb"
    nb_path.write_text((ROOT / "notebooks" / "01_ngram.ipynb").read_text())
    setup = next(c for c in nbformat.read(nb_path, as_version=4).cells if "lmcourse.setup(" in c.source)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv(runtime.NOTEBOOK_ENV, str(nb_path))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.v4.new_notebook(cells=[setup] + [nbformat.v4.new_code_cell(s) for s in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with tempfile.TemporaryDirectory() as sockets:     # short: a socket's path has a length limit
        NotebookClient(nb, timeout=60, allow_errors=True, config=ipc_kernel_config(sockets),
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert not [o for o in nb.cells[0].outputs if o.output_type == "error"], nb.cells[0].outputs
    return [[o for o in c.outputs if o.output_type == "error"] for c in nb.cells[1:]]


@pytest.mark.slow   # a kernel: a notebook execution
def test_a_name_error_names_the_exercise_to_run_first_but_not_under_nbgrader(tmp_path, monkeypatch):
    errors = _run(tmp_path, monkeypatch, [
        'count_ngrams([["a"]], 1)', "answer_q1", "not_a_course_name",
        "get_ipython().set_custom_exc((), None)\ncount_ngrams",
        # under nbgrader (validate or autograde) set-up installs no handler: a graded notebook shows the plain error
        "import os\nos.environ['NBGRADER_EXECUTION'] = 'autograde'\nrt = lmcourse.setup(quiet=True)\n"
        "assert get_ipython().custom_exceptions == ()", "count_ngrams"])
    assert [len(e) for e in errors] == [1, 1, 1, 1, 0, 1]       # each name still fails its cell
    assert errors[0][0].ename == "NameError"
    assert errors[0][0].evalue == (
        "name 'count_ngrams' is not defined. `count_ngrams` is defined in Exercise 2 — counting n-grams: "
        "run that cell first (Run > Run All Above Selected Cell), and look at its output if it fails")
    assert "`answer_q1` is defined in its answer cell, just above its test cell" in errors[1][0].evalue
    assert errors[2][0].evalue == "name 'not_a_course_name' is not defined"
    assert errors[3][0].evalue == "name 'count_ngrams' is not defined"   # the student's own choice
    assert errors[5][0].evalue == "name 'count_ngrams' is not defined"


def test_the_notebook_is_found_as_jupyterlab_or_vs_code_names_it(tmp_path, monkeypatch):
    nb = tmp_path / "01_ngram.ipynb"
    nb.write_text("{}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(runtime.NOTEBOOK_ENV, raising=False)
    assert runtime.notebook_path() is None
    assert runtime.notebook_path({"__vsc_ipynb_file__": str(nb)}) == nb                  # VS Code
    monkeypatch.setenv(runtime.NOTEBOOK_ENV, "work/01_ngram.ipynb")                       # relative to the root
    assert runtime.notebook_path() == tmp_path / "01_ngram.ipynb"                         # ... found in the cwd
    monkeypatch.setenv(runtime.NOTEBOOK_ENV, "a-session-id")
    assert runtime.notebook_path() is None


def test_a_name_set_by_another_cell_or_a_bare_letter_answer_says_what_to_do():
    nb = ROOT / "notebooks" / "01_ngram.ipynb"
    # a data cell not yet run (the student ran a test cell first): where it is, and what to run
    hint = runtime.name_error_hint("cows_table", nb)
    assert hint.startswith("`cows_table` is set by a cell under \"3. ") and "Run All Above" in hint
    assert "Run All Above" in runtime.name_error_hint("random", nb)       # the set-up cell's import
    assert runtime.name_error_hint("count_ngrams", nb).startswith("`count_ngrams` is defined in Exercise 2")
    # answer_q1 = B: the letter needs quotes (only where the failing line assigns an answer)
    assert runtime.name_error_hint("B", nb, "answer_q1 = B\n") == \
        'A letter is text: write answer_q1 = "B" (with the quotes)'
    assert runtime.name_error_hint("B", nb, "x = B\n") is None
    hint = runtime.name_error_hint("B", None, "answer_q_mask =  B  # I think\n")
    assert hint.endswith('answer_q_mask = "B" (with the quotes)')
    assert runtime.name_error_hint("not_a_course_name", nb) is None


@pytest.mark.slow   # a kernel: a notebook execution
def test_the_handler_reads_the_failing_line_for_a_bare_letter(tmp_path, monkeypatch):
    errors = _run(tmp_path, monkeypatch, ["answer_q1 = B", "print(cows_table)"])
    assert [len(e) for e in errors] == [1, 1]
    assert errors[0][0].evalue == ("name 'B' is not defined. A letter is text: "
                                   'write answer_q1 = "B" (with the quotes)')
    assert errors[1][0].evalue.startswith("name 'cows_table' is not defined. `cows_table` is set by a cell under")
