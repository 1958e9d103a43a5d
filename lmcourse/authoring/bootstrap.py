"""What the build adds to every notebook so that one click puts it on a free GPU: the "Open in
Colab / Kaggle" buttons under its title, and a first code cell that installs the course where the
kernel lacks it (``bootstrap_cell.py``, one template for all notebooks: the build writes the
repository and ref of :mod:`lmcourse.commands.links` over its ``REPOSITORY, REF = ...`` line).

The cell is a locked nbgrader cell (``grade_id`` ``bootstrap``, no points): the grader restores it
like the setup cell, and with lmcourse importable it only runs ``import lmcourse``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from ..commands import links
from ..grading.prepare import BOOTSTRAP_ID as GRADE_ID  # the grader tells this cell apart

TEMPLATE = Path(__file__).with_name("bootstrap_cell.py")
_PIN_RE = re.compile(r'^REPOSITORY, REF = "[^"]*", "[^"]*"$', re.M)


def cell_source(repository: str = links.REPOSITORY, ref: str = links.REF) -> str:
    """The first code cell's text: the template with ``repository`` and ``ref`` written in."""
    text = TEMPLATE.read_text(encoding="utf-8")
    if len(_PIN_RE.findall(text)) != 1:
        raise ValueError(f"{TEMPLATE} must set REPOSITORY, REF on one line of its own")
    pin = f"REPOSITORY, REF = {json.dumps(repository)}, {json.dumps(ref)}"
    return _PIN_RE.sub(lambda _: pin, text).rstrip("\n")


def bootstrap_cell(repository: str = links.REPOSITORY, ref: str = links.REF) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(cell_source(repository, ref))
    cell.id = GRADE_ID
    cell.metadata = {"cellView": "form",  # Colab shows the title line, the code folded away
                     "nbgrader": {"grade": False, "grade_id": GRADE_ID, "locked": True, "schema_version": 3,
                                  "solution": False, "task": False}}
    return cell


def add_course_cells(nb: nbformat.NotebookNode, path: str) -> nbformat.NotebookNode:
    """Put the buttons for ``path`` (``notebooks/01_ngram.ipynb``) under the title (the first line of
    the first markdown cell) and the set-up cell before the first code cell. Cell ids stay as they were."""
    title = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if title is None or not title.source.startswith("# "):
        raise ValueError(f"{path}: the first markdown cell must start with the '# ' title")
    head, _, rest = title.source.partition("\n")
    title.source = f"{head}\n\n{links.badges(path)}\n{rest}".rstrip("\n")
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first_code, bootstrap_cell())
    return nb


def retarget(nb: nbformat.NotebookNode, old: str, new: str) -> nbformat.NotebookNode:
    """The same notebook with its buttons pointing at ``new`` instead of ``old`` (the solution's)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and links.badges(old) in cell.source:
            cell.source = cell.source.replace(links.badges(old), links.badges(new))
    return nb
