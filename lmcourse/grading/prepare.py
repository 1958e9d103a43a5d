"""Check a submitted notebook against the release and make the copy that is graded.

- ``invalid-notebook``: empty file, not JSON, not an nbformat-4 notebook;
- ``wrong-assignment``: none of the release's grade ids is present;
- locked cells (tests, setup) compared with the release: an edited one is flagged
  (``tests-edited`` / ``locked-edited``) and a missing one (``tests-deleted`` /
  ``cells-deleted``) is put back at its place; the restored copy is graded anyway;
- nbgrader metadata compared with the release (``metadata-edited``) and restored;
- a grader-controlled preamble (:mod:`.preamble`: the notebook's reference withheld, processes
  confined, seeds, output cap) is injected first.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import nbformat

from . import preamble

INJECTED_TAG = "lmcourse_injected"      # metadata key of the cells the grader adds
_KEYS = ("grade", "solution", "locked", "points", "grade_id", "task")


@dataclass
class Prepared:
    status: str = "graded"          # or invalid-notebook / wrong-assignment
    flags: list[str] = field(default_factory=list)
    detail: str = ""
    nb: nbformat.NotebookNode | None = None


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


# the Colab set-up cell every notebook opens with (lmcourse.authoring.bootstrap.GRADE_ID): it names
# torch to install it where it is missing, which says nothing about what the notebook uses
BOOTSTRAP_ID = "bootstrap"


def uses_torch(release: nbformat.NotebookNode) -> bool:
    """Whether the notebook's own code names torch. When it does not (01), the preamble does not
    import torch to seed it: seconds on every submission, and 01 is graded most. Read from the
    release (the course's copy), never from the submission."""
    return any("torch" in "".join(c.source) for c in release.cells
               if c.cell_type == "code" and _meta(c).get("grade_id") != BOOTSTRAP_ID)


def _norm(src) -> str:
    src = "".join(src) if isinstance(src, list) else (src or "")
    return "\n".join(line.rstrip() for line in src.strip().splitlines())


def _flag(p: Prepared, flag: str) -> None:
    if flag not in p.flags:
        p.flags.append(flag)


def _injected(kind: str, source: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata[INJECTED_TAG] = {"kind": kind}
    return cell


def repair_submission(raw: bytes, release: nbformat.NotebookNode, seed: int = 0,
                      output_cap: int = 1_000_000, assignment: str = "") -> Prepared:
    """The notebook to grade (``.nb``), with status, flags and a one-line detail (``assignment``:
    its name, for a notebook graded from records whose preamble withholds the reference)."""
    p = Prepared()
    if not raw.strip():
        return Prepared("invalid-notebook", detail="empty file")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        return Prepared("invalid-notebook", detail=f"not JSON: {str(exc)[:120]}")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return Prepared("invalid-notebook", detail="JSON but not a notebook (no cell list)")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 (nbformat raises several types)
        return Prepared("invalid-notebook", detail=f"not a valid notebook: {str(exc).splitlines()[0][:120]}")

    rel_cells = [c for c in release.cells if _meta(c).get("grade_id")]
    rel_by_id = {_meta(c)["grade_id"]: c for c in rel_cells}
    sub_ids = {_meta(c).get("grade_id") for c in nb.cells} - {None}
    if not sub_ids & set(rel_by_id):
        detail = "none of this assignment's graded cells is in the notebook"
        if sub_ids:
            detail += f" (it has {', '.join(sorted(sub_ids)[:4])}...)"
        return Prepared("wrong-assignment", detail=detail)

    kept: dict[str, nbformat.NotebookNode] = {}
    cells = []
    for cell in nb.cells:
        cell.metadata.pop(INJECTED_TAG, None)  # a student cannot pose as the grader
        gid = _meta(cell).get("grade_id")
        if gid is None:
            cells.append(cell)
            continue
        ref = rel_by_id.get(gid)
        if ref is None or gid in kept:
            _flag(p, "metadata-edited")           # unknown or duplicated grade id
            cell.metadata.pop("nbgrader", None)
            cells.append(cell)
            continue
        rm = _meta(ref)
        if cell.cell_type != ref.cell_type or any(_meta(cell).get(k) != rm.get(k) for k in _KEYS):
            _flag(p, "metadata-edited")
        if rm.get("locked") or (rm.get("grade") and not rm.get("solution")):
            if _norm(cell.source) != _norm(ref.source):
                _flag(p, "tests-edited" if rm.get("grade") else "locked-edited")
            cell = copy.deepcopy(ref)                  # restored from the release
        elif cell.cell_type != ref.cell_type:
            cell = nbformat.from_dict({**copy.deepcopy(ref), "source": cell.source})
        else:
            cell.metadata["nbgrader"] = copy.deepcopy(ref.metadata["nbgrader"])
        kept[gid] = cell
        cells.append(cell)

    # put back what was deleted, after the release cell that precedes it
    for i, ref in enumerate(rel_cells):
        gid = _meta(ref)["grade_id"]
        if gid in kept:
            continue
        rm = _meta(ref)
        _flag(p, "tests-deleted" if rm.get("grade") and not rm.get("solution") else "cells-deleted")
        restored = copy.deepcopy(ref)
        pos = 0
        for prev in reversed(rel_cells[:i]):
            pid = _meta(prev)["grade_id"]
            if pid in kept:
                pos = next(j for j, c in enumerate(cells) if c is kept[pid]) + 1
                break
        cells.insert(pos, restored)
        kept[gid] = restored

    # the preamble first: nothing of the student's runs before it
    nb.cells = [_injected("preamble", preamble.source(seed, output_cap, uses_torch(release), assignment)), *cells]
    nb.metadata["kernelspec"] = copy.deepcopy(release.metadata.get("kernelspec", nb.metadata.get("kernelspec")))
    p.nb = nb
    return p


def strip_injected(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.cells = [c for c in nb.cells if INJECTED_TAG not in c.metadata]
    return nb
