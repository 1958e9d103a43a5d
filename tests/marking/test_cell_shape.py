"""The one test-cell shape of a notebook graded from records: the cell says which exercise, nothing
else runs in it. So a test cell never compares in the kernel and never touches a student object
outside the recording call (lmcourse.marking.kernel); everything else is ordinary, tested code."""

import re

import jupytext
import pytest

from lmcourse.marking.notebooks import TESTS, load
from tests.conftest import ROOT

_LINE = re.compile(r'^(#.*|tests\.(check|grade)\("(\w+)"\)|### (BEGIN|END) HIDDEN TESTS|)$')


def _test_cells(name):
    nb = jupytext.read(ROOT / "autograder" / "masters" / f"{name}.py", fmt="py:percent")
    for cell in nb.cells:
        gid = cell.metadata.get("tests")
        if cell.cell_type == "code" and gid:
            yield gid, cell.source


@pytest.mark.parametrize("name", sorted(TESTS))
def test_every_test_cell_only_names_its_exercise(name):
    spec = load(name)
    exercises = {ex.test_id: ex.name for ex in spec.exercises}
    seen = []
    for gid, source in _test_cells(name):
        assert gid in exercises, f"{name}: the test cell {gid} is not an exercise of lmcourse.marking ({TESTS[name]})"
        lines = source.strip().split("\n")
        for line in lines:
            m = _LINE.match(line.strip())
            assert m, f"{name}, {gid}: {line!r} — a test cell holds comments and tests.check/tests.grade only"
            assert not m.group(3) or m.group(3) == exercises[gid], f"{name}, {gid}: names {m.group(3)}"
        code = [x.strip() for x in lines if x.strip() and not x.strip().startswith("# ")]
        assert code == [f'tests.check("{exercises[gid]}")', "### BEGIN HIDDEN TESTS",
                        f'tests.grade("{exercises[gid]}")', "### END HIDDEN TESTS"], f"{name}, {gid}: {code}"
        seen.append(gid)
    assert sorted(seen) == sorted(exercises), f"{name}: exercises without a test cell: {set(exercises) - set(seen)}"


def test_the_shape_check_can_fail():
    assert not _LINE.match("check_equal(count_ngrams(x, 2), {})")
    assert not _LINE.match("_got = count_ngrams(x, 2)")
