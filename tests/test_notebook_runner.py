"""The headless runner behind `lmcourse solutions`: what its kernels are told and what it prints."""

import nbformat

from lmcourse.notebook_runner import CellProgress, execute_notebook


def test_the_headless_runner_tells_its_kernel_to_show_no_bar(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os; print(os.environ.get('LMCOURSE_PROGRESS'))")])
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    ran = execute_notebook(path, timeout=120)
    assert ran.cells[0].outputs[0]["text"].strip() == "0"


def test_progress_names_code_cells_only():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## A heading"),
                                         nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("y = 2")])
    lines = []
    progress = CellProgress(nb, lines.append, slow=0.0)
    for index, cell in enumerate(nb.cells):
        progress.start(cell=cell, cell_index=index)
        progress.executed(cell=cell, cell_index=index)
    assert lines == ["    cell 1/2: x = 1", "    cell 1/2 done in 0.0 s",
                     "    cell 2/2: y = 2", "    cell 2/2 done in 0.0 s"]
