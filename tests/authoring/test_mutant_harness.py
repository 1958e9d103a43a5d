"""The mutant harness's state check (lmcourse.authoring.mutants.NotebookSession.try_mutants): it
checks the state once per target, so a mutant that damages state the notebook built must still not
decide the verdict of the next mutant of the same target. One small notebook, one kernel."""

import nbformat
import pytest

from lmcourse.authoring.mutants import AUTOGRADE_ENV, Mutant, NotebookSession

pytestmark = pytest.mark.slow  # a kernel


def _cell(source: str, **nbgrader) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "points": 0, **nbgrader}
    return cell


def _notebooks(folder):
    table = _cell('table = {"a": 1}')   # built once, by a cell no mutant pass re-runs
    answer = _cell("def first(t):\n    return t['a']\n", grade_id="first", solution=True, grade=False)
    test = _cell("assert first(table) == 1, 'first(table) should be 1'\n",
                 grade_id="first_tests", grade=True, solution=False, points=1)
    source, release = nbformat.v4.new_notebook(), nbformat.v4.new_notebook()
    source.cells = [table, answer, test]
    release.cells = [table, _cell("def first(t):\n    raise NotImplementedError\n", grade_id="first",
                                  solution=True, grade=False), test]
    nbformat.write(source, folder / "source.ipynb")
    nbformat.write(release, folder / "release.ipynb")
    return folder / "source.ipynb", folder / "release.ipynb"


def test_a_mutant_that_damages_state_does_not_decide_the_next_ones_verdict(tmp_path):
    damages = Mutant("writes into the table and answers 0", "first",
                     "def first(t):\n    t['a'] = 2\n    return 0\n")
    # would be caught, falsely, if it ran on the damaged table (it reads 2 there): it must survive
    honest = Mutant("reads the table another way (no bug)", "first", "def first(t):\n    return t.get('a')\n")
    caught = Mutant("answers 0", "first", "def first(t):\n    return 0\n")
    session = NotebookSession(*_notebooks(tmp_path))
    with session.started(AUTOGRADE_ENV):
        results = session.try_mutants([damages, honest, caught])
        session.run("assert table == {'a': 1}, table")   # the harness left the notebook's state clean
    assert [r.mutant.name for r in results] == [damages.name, honest.name, caught.name]   # the catalogue's order
    assert results[0].lost_points and results[0].failed_cells == ["first_tests"]
    assert not results[1].lost_points, results[1]
    assert results[2].lost_points and results[2].caught_visible_by == "first_tests"


def test_alternatives_get_the_same_state_check(tmp_path):
    """An alternative that writes into the table (it keeps its points: the test reads the table
    after the answer) must not cost the next alternative of the same target its points."""
    writes = Mutant("writes the value it read back into the table", "first",
                    "def first(t):\n    v = t['a']\n    t['a'] = v + 1\n    return v\n")
    honest = Mutant("reads the table another way", "first", "def first(t):\n    return t.get('a')\n")
    session = NotebookSession(*_notebooks(tmp_path))
    with session.started(AUTOGRADE_ENV):
        failures = session.try_alternatives([writes, honest])
        session.run("assert table == {'a': 1}, table")
    assert failures == [[], []], failures
