"""One source, three products.

``autograder/masters/NN_name.py`` (jupytext py:percent) is the only hand-written form of a
notebook. Its cells carry short metadata that this module expands into nbgrader's:

==============================================  ==============================================
master cell header                              becomes
==============================================  ==============================================
``# %% solution="count_ngrams"``                autograded answer (code): the student fills it in
``# %% tests="count_ngrams_tests" points=2``    locked test cell worth 2 points, right after its
                                                answer (id: the answer's id + ``_tests``)
``# %% [markdown] answer="q1" points=2``        free-text answer, graded by hand
``# %% locked="setup"``                         read-only cell (restored if edited)
==============================================  ==============================================

From the masters, :func:`build` writes

1. ``autograder/source/NN_name/NN_name.ipynb`` — the nbgrader source notebook;
2. ``notebooks/NN_name.ipynb`` — the student notebook, from ``nbgrader generate_assignment``;
3. ``solutions/NN_name.ipynb`` — solutions and all tests, markers removed.

Each gets "Open in Colab / Kaggle" buttons under its title and, before its first code cell, the
locked set-up cell that installs the course on a fresh Colab or Kaggle runtime
(:mod:`lmcourse.authoring.bootstrap`; the repository and ref come from :mod:`lmcourse.commands.links`).

A stub in the student notebook names its exercise and what to write
(``raise NotImplementedError("Exercise 2: write count_ngrams here, then run the test cell below")``,
made by ``lmcourse.authoring.stubs.NamedStubs``, which ``autograder/nbgrader_config.py`` uses, so the
grader's release has the same);
:func:`check_stubs` refuses a master whose answer cell has no ``### Exercise N`` heading above it.

The output is a pure function of the masters: cell ids are derived from positions and
grade ids, and notebooks are written with sorted keys, so rebuilding never shows a diff.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

import jupytext
import nbformat

from ..commands.paths import repo_root
from ..grading.nbgrader_cli import run_nbgrader
from ..marking import grade_line, notebooks
from . import bootstrap, readme

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
MARKER_RE = re.compile(r"^\s*#*\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$")
_OUR_KEYS = ("solution", "tests", "answer", "locked", "points")


class MasterError(ValueError):
    """A master notebook is malformed; the message names the cell."""


def masters(root: Path | None = None) -> list[Path]:
    root = root or repo_root()
    return sorted((root / "autograder" / "masters").glob("[0-9][0-9]_*.py"))


def _nbgrader_meta(cell, where: str) -> dict | None:
    md = cell.metadata
    kinds = [k for k in ("solution", "tests", "answer", "locked") if k in md]
    if not kinds:
        if "points" in md:
            raise MasterError(f"{where}: points= without solution/tests/answer")
        return None
    if len(kinds) > 1:
        raise MasterError(f"{where}: a cell may be only one of solution/tests/answer/locked, got {kinds}")
    kind, gid = kinds[0], md[kinds[0]]
    if not isinstance(gid, str) or not re.fullmatch(r"[A-Za-z0-9_\-]+", gid):
        raise MasterError(f"{where}: {kind}= needs a grade id made of letters, digits, _ or -")
    meta = {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3,
            "solution": False, "task": False}
    if kind == "solution":
        if cell.cell_type != "code":
            raise MasterError(f"{where}: solution= is for code cells; use answer= for free text")
        meta["solution"] = True
    elif kind == "tests":
        if cell.cell_type != "code":
            raise MasterError(f"{where}: tests= must be a code cell")
        meta.update(grade=True, locked=True, points=_points(md, where))
    elif kind == "answer":
        if cell.cell_type != "markdown":
            raise MasterError(f"{where}: answer= is for markdown (free-text) cells")
        meta.update(grade=True, solution=True, points=_points(md, where))
    else:
        meta["locked"] = True
    return meta


def _points(md, where: str) -> float:
    pts = md.get("points")
    if not isinstance(pts, (int, float)) or pts <= 0:
        raise MasterError(f"{where}: graded cells need points=N with N > 0")
    return pts


def master_to_source(path: Path) -> nbformat.NotebookNode:
    """Read a master and return the nbgrader source notebook."""
    nb = jupytext.read(path, fmt="py:percent")
    seen: set[str] = set()
    for i, cell in enumerate(nb.cells):
        where = f"{path.name}, cell {i + 1}"
        meta = _nbgrader_meta(cell, where)
        cell.metadata = {}
        if meta:
            if meta["grade_id"] in seen:
                raise MasterError(f"{where}: grade id {meta['grade_id']!r} used twice")
            seen.add(meta["grade_id"])
            cell.metadata["nbgrader"] = meta
            cell.id = meta["grade_id"]
        else:
            cell.id = f"cell-{i:03d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    _inline_hidden_tests(nb, path.stem)
    nb.metadata = {"kernelspec": dict(KERNELSPEC),
                   "language_info": {"name": "python"}}
    nb.nbformat, nb.nbformat_minor = 4, 5
    nbformat.validate(nb)
    return nb


def _inline_hidden_tests(nb: nbformat.NotebookNode, name: str) -> None:
    """A notebook graded from records gets each exercise's hidden cases, and the stand-ins' code where
    it names some, in that exercise's hidden test (:mod:`lmcourse.marking.grade_line`)."""
    if not notebooks.marked(name):
        return
    spec = notebooks.load(name)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
            cell.source = grade_line.inline(cell.source, spec)


def source_to_solution(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Keep every solution and test, drop the nbgrader markers and metadata (and the hidden cases' and
    stand-ins' text: the solution notebook imports the hidden module and the reference instead)."""
    out = nbformat.from_dict(nb)
    for cell in out.cells:
        cell.source = grade_line.strip(cell.source)
        lines = cell.source.split("\n")
        cell.source = "\n".join(line for line in lines if not MARKER_RE.match(line)).strip("\n")
        cell.metadata.pop("nbgrader", None)
    return out


def _write(nb: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = nbformat.writes(nb, version=4)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


STUB_RE = re.compile(r"raise NotImplementedError\((.*)\)")
_NAMED_STUB_RE = re.compile(r'"(Exercise \d+[a-z]?: write [\w.]+ here|set answer_\w+ to your answer\'s letter here), '
                            r'then run the test cell below"')


def check_stubs(release: nbformat.NotebookNode, name: str) -> None:
    """Every code stub of the released notebook says which exercise it is and what to write
    (``lmcourse.authoring.stubs.NamedStubs``); a solution region with no
    ``### Exercise N`` heading above it is refused, naming the cell."""
    for cell in release.cells:
        if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        gid = cell.metadata["nbgrader"]["grade_id"]
        stubs = STUB_RE.findall(cell.source)
        if not stubs:
            raise MasterError(f"{name}, answer {gid!r}: no stub in the student notebook (is the "
                              "ClearSolutions preprocessor of autograder/nbgrader_config.py in use?)")
        for args in stubs:
            if not _NAMED_STUB_RE.fullmatch(args):
                raise MasterError(f"{name}, answer {gid!r}: its stub does not name an exercise "
                                  f"(NotImplementedError({args})): put the answer cell under a "
                                  "'### Exercise N — ...' heading, inside the def/class it asks for")


def _normalise_release(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    return nb


def build(root: Path | None = None, out: Path | None = None, names: list[str] | None = None,
          quiet: bool = False) -> list[Path]:
    """Build every master (or ``names``) from ``root`` into ``out`` (default: ``root``)."""
    root = Path(root or repo_root())
    out = Path(out or root)
    written: list[Path] = []
    todo = [m for m in masters(root) if names is None or m.stem in names]
    if names and len(todo) != len(names):
        known = [m.stem for m in masters(root)]
        raise MasterError(f"unknown notebook(s) {sorted(set(names) - {m.stem for m in todo})}; known: {known}")
    with tempfile.TemporaryDirectory(prefix="lmcourse-build-") as tmp:
        course = Path(tmp)
        shutil.copy(root / "autograder" / "nbgrader_config.py", course / "nbgrader_config.py")
        sources = {}
        for master in todo:
            name = master.stem
            # the Colab / Kaggle buttons and the first cell that installs the course there (bootstrap.py)
            sources[name] = src = bootstrap.add_course_cells(master_to_source(master), f"notebooks/{name}.ipynb")
            for dest in (out / "autograder" / "source" / name / f"{name}.ipynb",
                         course / "source" / name / f"{name}.ipynb"):
                _write(src, dest)
            written.append(out / "autograder" / "source" / name / f"{name}.ipynb")
        # one nbgrader process for them all ("*": every assignment in this temporary course): its
        # start-up and gradebook cost seconds, once instead of once per notebook
        if todo:
            run_nbgrader(["generate_assignment", todo[0].stem if len(todo) == 1 else "*", "--force",
                          "--log-level=WARN"], course)
        for name, src in sources.items():
            release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
            check_stubs(release, name)
            _write(_normalise_release(release), out / "notebooks" / f"{name}.ipynb")
            solution = bootstrap.retarget(source_to_solution(src), f"notebooks/{name}.ipynb",
                                          f"solutions/{name}.ipynb")
            _write(solution, out / "solutions" / f"{name}.ipynb")
            written += [out / "notebooks" / f"{name}.ipynb", out / "solutions" / f"{name}.ipynb"]
            if not quiet:
                print(f"built {name}: source, student notebook, solution")
    if out == root and (root / "README.md").is_file():
        try:
            for document in readme.write(root):
                written.append(document)
                if not quiet:
                    print(f"{document.relative_to(root)}: its lists of notebooks written anew from the masters")
        except readme.ReadmeError as e:     # the notebooks are built; a fork's own README is its own business
            print(f"a list of notebooks left as it was: {e}", file=sys.stderr)
    return written
